#include "model/config_json.h"

#include <cmath>

#include "core/error.h"
#include "model/json_file.h"

namespace seam::config_json {

const json* find_field(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

int64_t as_int(const json& v, const char* file, const std::string& key) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    double d = v.get<double>();
    // Some exporters write 4096.0; accept integral values only.
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) return int64_t(d);
    throw Error(detail::concat(file, ": field '", key, "' must be an integer, got ", v.dump()));
  }
  throw Error(detail::concat(file, ": field '", key, "' must be an integer, got ", json_type_name(v)));
}

double as_number(const json& v, const char* file, const std::string& key) {
  SEAM_CHECK(v.is_number(), file, ": field '", key, "' must be a number, got ", json_type_name(v));
  return v.get<double>();
}

int required_int(const json& j, const char* file, const char* key) {
  const json* v = find_field(j, key);
  SEAM_CHECK(v, file, ": missing field '", key, "'");
  int64_t x = as_int(*v, file, key);
  SEAM_CHECK(x > 0 && x <= INT32_MAX, file, ": field '", key, "' must be positive (and fit in int32), got ", x);
  return int(x);
}

int optional_int(const json& j, const char* file, const char* key, int fallback) {
  const json* v = find_field(j, key);
  if (!v) return fallback;
  int64_t x = as_int(*v, file, key);
  SEAM_CHECK(x > 0 && x <= INT32_MAX, file, ": field '", key, "' must be positive (and fit in int32), got ", x);
  return int(x);
}

double optional_number(const json& j, const char* file, const char* key, double fallback) {
  const json* v = find_field(j, key);
  return v ? as_number(*v, file, key) : fallback;
}

bool optional_bool(const json& j, const char* file, const char* key, bool fallback) {
  const json* v = find_field(j, key);
  if (!v) return fallback;
  SEAM_CHECK(v->is_boolean(), file, ": field '", key, "' must be true or false, got ", json_type_name(*v));
  return v->get<bool>();
}

std::string optional_string(const json& j, const char* file, const char* key, const std::string& fallback) {
  const json* v = find_field(j, key);
  if (!v) return fallback;
  SEAM_CHECK(v->is_string(), file, ": field '", key, "' must be a string, got ", json_type_name(*v));
  return v->get<std::string>();
}

}  // namespace seam::config_json
