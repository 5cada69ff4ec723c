// What the tool-call format files share (inside server/: tool_call_formats.cpp holds the JSON formats
// and the registry, tool_call_formats_xml.cpp the formats that write parameters as tagged raw text,
// tool_call_formats_pythonic.cpp the Python-call format).
#pragma once
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

// The types a request's tools declare for their parameters, for formats whose parameter values are
// raw text (qwen3_coder, glm45).
class ToolParameterTypes {
 public:
  // `tools`: the request's tools (OpenAI's [{"type": "function", "function": {name, parameters}}]).
  explicit ToolParameterTypes(const nlohmann::ordered_json& tools) : tools_(tools) {}

  // The JSON text of parameter `param` of function `function` written as `raw` (sglang's rules):
  // "null" (any case) is null; a declared string stays the text; integer: the text when it is an
  // integer; number: when it is a number (an integer when written without '.' or an exponent);
  // boolean: true / false in any case; object / array: the text when it parses as JSON. Anything
  // else, and a parameter or function the tools do not declare, is the text as a string, unless
  // that text is a JSON object or array.
  std::string value_json(const std::string& function, const std::string& param, const std::string& raw) const;

 private:
  // The declared type ("" when unknown): "type" (the first that is not "null" of a list), else the
  // first anyOf / oneOf branch's, else inferred from enum, properties or items.
  std::string type_of(const std::string& function, const std::string& param) const;

  nlohmann::ordered_json tools_;
};

std::unique_ptr<ToolCallParser> make_qwen3_coder_parser(const nlohmann::ordered_json& tools);
std::unique_ptr<ToolCallParser> make_glm45_parser(const nlohmann::ordered_json& tools);
std::unique_ptr<ToolCallParser> make_pythonic_parser();

}  // namespace seam::tool_call_formats
