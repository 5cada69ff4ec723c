#include "model/json_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/json_parse.h"

namespace seam {

nlohmann::json parse_json_text(const std::string& text, const std::string& what) {
  try {
    return parse_json_document(text);
  } catch (const JsonParseError& e) {
    // "not valid JSON: parse error at line 3, column 5: syntax error ...": keep
    // the position and the reason. A number past the double range (1e400)
    // names its field instead; before, it escaped as nlohmann's out_of_range.
    const std::string msg = e.what();
    const std::string marker = "parse error at ";
    auto at = msg.find(marker);
    if (at != std::string::npos) throw Error(what + ": malformed JSON at " + msg.substr(at + marker.size()));
    throw Error(what + ": " + msg);
  }
}

nlohmann::json read_json_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  SEAM_CHECK(std::filesystem::is_regular_file(path, ec), path, ": file not found");
  std::ifstream f(path, std::ios::binary);
  SEAM_CHECK(f.good(), path, ": cannot read");
  std::stringstream ss;
  ss << f.rdbuf();
  SEAM_CHECK(!f.bad(), path, ": cannot read");
  return parse_json_text(ss.str(), what);
}

std::string json_type_name(const nlohmann::json& j) {
  if (j.is_number_float()) return "a non-integer number";
  return j.type_name();
}

}  // namespace seam
