// Reading the small JSON files of a model folder (config.json, index json,
// safetensors headers) with errors that name the file and say what is wrong.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace seam {

// Parses `text`; a syntax error throws seam::Error
// "<what>: malformed JSON at line L, column C: <reason>".
nlohmann::json parse_json_text(const std::string& text, const std::string& what);

// Reads and parses `path`; a missing or unreadable file throws
// "<path>: file not found" / "<path>: cannot read"; `what` names it in parse errors.
nlohmann::json read_json_file(const std::string& path, const std::string& what);

// "string", "number", "null", ... for messages about wrongly typed fields.
std::string json_type_name(const nlohmann::json& j);

}  // namespace seam
