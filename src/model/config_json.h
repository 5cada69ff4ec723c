// config_json: typed reads of config.json fields with one-line errors naming the file and
// the field. A field is absent when its key is missing or its value is null (Hugging Face
// writes "head_dim": null, "rope_scaling": null for "use the default").
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace seam::config_json {

using nlohmann::json;

const json* find_field(const json& j, const char* key);
int64_t as_int(const json& v, const char* file, const std::string& key);
double as_number(const json& v, const char* file, const std::string& key);
int required_int(const json& j, const char* file, const char* key);
// A positive int32, or `fallback` when absent.
int optional_int(const json& j, const char* file, const char* key, int fallback);
double optional_number(const json& j, const char* file, const char* key, double fallback);
bool optional_bool(const json& j, const char* file, const char* key, bool fallback);
std::string optional_string(const json& j, const char* file, const char* key, const std::string& fallback);

}  // namespace seam::config_json
