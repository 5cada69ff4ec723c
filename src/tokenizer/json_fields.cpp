#include "tokenizer/json_fields.h"

#include "tokenizer/regex.h"

namespace seam::json_fields {

std::string pattern_source(const json& pattern, const std::string& where) {
  SEAM_CHECK(pattern.is_object(), where, ".pattern: expected {\"String\": ...} or {\"Regex\": ...}");
  if (auto it = pattern.find("String"); it != pattern.end()) {
    SEAM_CHECK(it->is_string(), where, ".pattern.String: expected a string");
    return Regex::escape(it->get<std::string>());
  }
  if (auto it = pattern.find("Regex"); it != pattern.end()) {
    SEAM_CHECK(it->is_string(), where, ".pattern.Regex: expected a string");
    return it->get<std::string>();
  }
  throw Error(where + ".pattern: expected {\"String\": ...} or {\"Regex\": ...}");
}

}  // namespace seam::json_fields
