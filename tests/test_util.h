// Helpers shared by the tests: paths of the shared folder and temp dirs.
#pragma once
#include <string>

namespace seam::test {
std::string shared_dir();           // ../shared (models, golden, tokenizers)
std::string stories_dir();          // ../shared/models/stories260K
std::string make_temp_dir(const std::string& tag);  // a fresh empty directory
std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& data);
}  // namespace seam::test
