// Typed field access for tokenizer.json / tokenizer_config.json. Every miss
// or type mismatch throws seam::Error naming the file, the field path and
// what was expected, so a malformed file never crashes the loader.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"

namespace seam::json_fields {

using json = nlohmann::json;

inline const json& require(const json& obj, const char* key, const std::string& where) {
  SEAM_CHECK(obj.is_object(), where, ": expected an object, got ", obj.type_name());
  auto it = obj.find(key);
  SEAM_CHECK(it != obj.end(), where, ": missing field '", key, "'");
  return *it;
}

inline std::string require_string(const json& obj, const char* key, const std::string& where) {
  const json& v = require(obj, key, where);
  SEAM_CHECK(v.is_string(), where, ".", key, ": expected a string, got ", v.type_name());
  return v.get<std::string>();
}

inline bool optional_bool(const json& obj, const char* key, bool fallback, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  SEAM_CHECK(it->is_boolean(), where, ".", key, ": expected true or false, got ", it->type_name());
  return it->get<bool>();
}

inline std::string optional_string(const json& obj, const char* key, const std::string& fallback,
                                   const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  SEAM_CHECK(it->is_string(), where, ".", key, ": expected a string, got ", it->type_name());
  return it->get<std::string>();
}

inline int64_t require_int(const json& obj, const char* key, const std::string& where) {
  const json& v = require(obj, key, where);
  SEAM_CHECK(v.is_number_integer(), where, ".", key, ": expected an integer, got ", v.type_name());
  return v.get<int64_t>();
}

inline int64_t optional_int(const json& obj, const char* key, int64_t fallback, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  SEAM_CHECK(it->is_number_integer(), where, ".", key, ": expected an integer, got ", it->type_name());
  return it->get<int64_t>();
}

inline const json& require_array(const json& obj, const char* key, const std::string& where) {
  const json& v = require(obj, key, where);
  SEAM_CHECK(v.is_array(), where, ".", key, ": expected an array, got ", v.type_name());
  return v;
}

// A tokenizer.json pattern: {"String": "..."} or {"Regex": "..."}. Returns the
// PCRE2 source (a literal is escaped).
std::string pattern_source(const json& pattern, const std::string& where);

}  // namespace seam::json_fields
