// What the tool-call format files share (inside server/: tool_call_formats.cpp holds the JSON formats
// and the registry, tool_call_formats_xml.cpp the formats that write parameters as tagged raw text,
// tool_call_formats_pythonic.cpp the Python-call format).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/tool_call_parser.h"

namespace seam::tool_call_formats {

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

inline size_t skip_space(std::string_view s, size_t i = 0) {
  while (i < s.size() && is_space(s[i])) ++i;
  return i;
}

// Finds `marker` in buf (its length in marker_len); else holds back a partial marker at its end.
inline size_t find_marker(std::string_view buf, std::string_view marker, size_t& marker_len, size_t& held) {
  const size_t p = buf.find(marker);
  if (p != std::string_view::npos) {
    marker_len = marker.size();
    return p;
  }
  held = tool_call_detail::partial_suffix(buf, marker);
  return std::string_view::npos;
}

// JSON text of model output -> a value; discarded when not valid JSON, or when nested past
// k_max_json_depth (too deep for what walks it afterwards: core/json_parse.h), so not a call.
nlohmann::ordered_json parse_json(std::string_view text);
// A value as the arguments' JSON text (compact; invalid UTF-8 replaced).
std::string dump_json(const nlohmann::ordered_json& j);

// Where a call region starts, for formats whose call may open the output bare (Llama 3's '{',
// pythonic's '[') or follow `marker` anywhere: the opener at the output's start when it comes
// before any marker (marker_len 0: the opener is the call's own text), else the marker.
inline size_t find_opener_or_marker(std::string_view buf, bool at_output_start, char opener, std::string_view marker,
                                    size_t& marker_len, size_t& held) {
  size_t tag_len = 0, tag_held = 0;
  const size_t tag = find_marker(buf, marker, tag_len, tag_held);
  if (at_output_start) {
    const size_t i = skip_space(buf);
    if (i < buf.size() && buf[i] == opener && (tag == std::string_view::npos || i < tag)) {
      marker_len = 0;
      return i;
    }
  }
  marker_len = tag_len;
  held = tag_held;
  return tag;
}

// The types a request's tools declare for their parameters, for formats whose parameter values are
// raw text (qwen3_coder, glm45).
class ToolParameterTypes {
 public:
  // `tools`: the request's tools (OpenAI's [{"type": "function", "function": {name, parameters}}]).
  // Read once into a table of declared types: the parser keeps no copy of the tools.
  explicit ToolParameterTypes(const nlohmann::ordered_json& tools);

  // The JSON text of parameter `param` of function `function` written as `raw` (sglang's rules):
  // "null" (any case) is null; a declared string stays the text; integer: the text when it is an
  // integer; number: when it is a number (an integer when written without '.' or an exponent);
  // boolean: true / false in any case; object / array: the text when it parses as JSON. Anything
  // else, and a parameter or function the tools do not declare, is the text as a string, unless
  // that text is a JSON object or array.
  std::string value_json(const std::string& function, const std::string& param, const std::string& raw) const;

 private:
  // A parameter's declared type ("" when unknown): "type" (the first that is not "null" of a list),
  // else the first anyOf / oneOf branch's, else inferred from enum, properties or items.
  static std::string declared_type(const nlohmann::ordered_json& schema);

  std::map<std::string, std::map<std::string, std::string>> types_;  // function -> parameter -> type
};

std::unique_ptr<ToolCallParser> make_qwen3_coder_parser(const nlohmann::ordered_json& tools);
std::unique_ptr<ToolCallParser> make_glm45_parser(const nlohmann::ordered_json& tools);
std::unique_ptr<ToolCallParser> make_pythonic_parser();

}  // namespace seam::tool_call_formats
