#include "test_util.h"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace seam::test {
std::string shared_dir() { return SEAM_SHARED_DIR; }
std::string stories_dir() { return shared_dir() + "/models/stories260K"; }
std::string make_temp_dir(const std::string& tag) {
  static std::atomic<int> n{0};
  auto p = std::filesystem::temp_directory_path() /
           ("seam_" + tag + "_" + std::to_string(getpid()) + "_" + std::to_string(n++));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}
std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
void write_file(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary);
  f << data;
}
}  // namespace seam::test
