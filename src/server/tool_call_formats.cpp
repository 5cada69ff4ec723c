// The tool-call formats of ToolCallParser (see tool_call_parser.h), by sglang's names.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "server/tool_call_parser.h"

namespace seam {

namespace {

using ojson = nlohmann::ordered_json;
using tool_call_detail::json_value_end;
using tool_call_detail::partial_suffix;
constexpr size_t npos = std::string::npos;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t skip_space(std::string_view s, size_t i = 0) {
  while (i < s.size() && is_space(s[i])) ++i;
  return i;
}

// JSON text -> value; discarded (is_discarded) when not valid JSON.
ojson parse_json(std::string_view text) { return ojson::parse(text.begin(), text.end(), nullptr, false); }

// {"name": N, "arguments"|"parameters": {...}} -> a call; false when it is not one.
template <typename Call>
bool call_from_json(const ojson& j, Call& call) {
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return false;
  call.name = j["name"].get<std::string>();
  if (call.name.empty()) return false;
  const char* key = j.contains("arguments") ? "arguments" : j.contains("parameters") ? "parameters" : nullptr;
  if (!key) {
    call.arguments = "{}";
  } else if (j[key].is_string()) {  // already a JSON string
    call.arguments = j[key].get<std::string>();
  } else {
    call.arguments = j[key].dump(-1, ' ', false, ojson::error_handler_t::replace);
  }
  return true;
}

// Finds `marker` in buf; else holds back a partial marker at its end.
size_t find_marker(std::string_view buf, std::string_view marker, size_t& marker_len, size_t& held) {
  const size_t p = buf.find(marker);
  if (p != npos) {
    marker_len = marker.size();
    return p;
  }
  held = partial_suffix(buf, marker);
  return npos;
}

// <tool_call>{json}</tool_call>: one region per call.
class HermesParser : public ToolCallParser {
  static constexpr std::string_view k_begin = "<tool_call>";
  static constexpr std::string_view k_end = "</tool_call>";

  size_t find_start(std::string_view buf, bool, size_t& marker_len, size_t& held) const override {
    return find_marker(buf, k_begin, marker_len, held);
  }
  size_t parse_region(std::string_view buf, bool final, std::vector<Call>& calls, bool& done,
                      bool& failed) const override {
    const size_t e = buf.find(k_end);
    if (e == npos && !final) return 0;
    const std::string_view body = e == npos ? buf : buf.substr(0, e);
    Call call;
    if (!call_from_json(parse_json(body), call)) {
      failed = true;
      return 0;
    }
    calls.push_back(std::move(call));
    done = true;
    return e == npos ? buf.size() : e + k_end.size();
  }
};

// Llama 3.x: the output starts with a JSON call (more may follow after ';'),
// or <|python_tag|> is followed by one. One region per call.
class Llama3Parser : public ToolCallParser {
  static constexpr std::string_view k_tag = "<|python_tag|>";

  size_t find_start(std::string_view buf, bool at_output_start, size_t& marker_len, size_t& held) const override {
    size_t brace = npos;
    if (at_output_start) {
      const size_t i = skip_space(buf);
      if (i == buf.size()) {  // only whitespace so far: it may precede a call
        held = buf.size();
        return npos;
      }
      if (buf[i] == '{') brace = i;
    }
    size_t tag_len = 0, tag_held = 0;
    const size_t tag = find_marker(buf, k_tag, tag_len, tag_held);
    if (brace != npos && (tag == npos || brace < tag)) {
      marker_len = 0;  // the brace is the call's own text
      return brace;
    }
    marker_len = tag_len;
    held = tag_held;
    return tag;
  }
  size_t parse_region(std::string_view buf, bool final, std::vector<Call>& calls, bool& done,
                      bool& failed) const override {
    const size_t i = skip_space(buf);
    if (i == buf.size()) return 0;  // undecided (at the end: not a call)
    const size_t end = json_value_end(buf);
    if (buf[i] != '{') {
      failed = true;
      return 0;
    }
    if (end == npos) {
      if (final) failed = true;
      return 0;
    }
    Call call;
    if (!call_from_json(parse_json(buf.substr(0, end)), call)) {
      failed = true;
      return 0;
    }
    calls.push_back(std::move(call));
    done = true;
    return end;
  }
};

// [TOOL_CALLS] [{...}, ...]: one region per list of calls.
class MistralParser : public ToolCallParser {
  static constexpr std::string_view k_begin = "[TOOL_CALLS]";

  size_t find_start(std::string_view buf, bool, size_t& marker_len, size_t& held) const override {
    return find_marker(buf, k_begin, marker_len, held);
  }
  size_t parse_region(std::string_view buf, bool final, std::vector<Call>& calls, bool& done,
                      bool& failed) const override {
    const size_t i = skip_space(buf);
    if (i == buf.size()) return 0;
    if (buf[i] != '[' && buf[i] != '{') {
      failed = true;
      return 0;
    }
    const size_t end = json_value_end(buf);
    if (end == npos) {
      if (final) failed = true;
      return 0;
    }
    const ojson j = parse_json(buf.substr(0, end));
    const ojson list = j.is_array() ? j : ojson::array({j});
    for (const ojson& item : list) {
      Call call;
      if (!call_from_json(item, call)) {
        failed = true;
        calls.clear();
        return 0;
      }
      calls.push_back(std::move(call));
    }
    if (calls.empty()) {
      failed = true;
      return 0;
    }
    done = true;
    return end;
  }
};

// DeepSeek V3: <｜tool▁calls▁begin｜> then per call
// <｜tool▁call▁begin｜>TYPE<｜tool▁sep｜>NAME\n```json\nARGS\n```<｜tool▁call▁end｜>, then
// <｜tool▁calls▁end｜>. One region for the whole block.
class DeepSeekV3Parser : public ToolCallParser {
  static constexpr std::string_view k_begin = "<｜tool▁calls▁begin｜>";
  static constexpr std::string_view k_end = "<｜tool▁calls▁end｜>";
  static constexpr std::string_view k_call_begin = "<｜tool▁call▁begin｜>";
  static constexpr std::string_view k_call_end = "<｜tool▁call▁end｜>";
  static constexpr std::string_view k_sep = "<｜tool▁sep｜>";

  size_t find_start(std::string_view buf, bool, size_t& marker_len, size_t& held) const override {
    return find_marker(buf, k_begin, marker_len, held);
  }
  // One call's text between its begin and end markers.
  static bool parse_call(std::string_view s, Call& call) {
    const size_t sep = s.find(k_sep);
    if (sep == npos) return false;
    std::string_view rest = s.substr(sep + k_sep.size());
    const size_t nl = rest.find('\n');
    if (nl == npos) return false;
    call.name = std::string(rest.substr(0, nl));
    if (call.name.empty()) return false;
    rest = rest.substr(nl + 1);
    constexpr std::string_view fence = "```json";
    if (rest.substr(0, fence.size()) != fence) return false;
    rest = rest.substr(fence.size());
    const size_t close = rest.rfind("```");
    if (close == npos) return false;
    const ojson args = parse_json(rest.substr(0, close));
    if (args.is_discarded() || !args.is_object()) return false;
    if (!std::all_of(rest.begin() + long(close) + 3, rest.end(), is_space)) return false;
    call.arguments = args.dump(-1, ' ', false, ojson::error_handler_t::replace);
    return true;
  }
  size_t parse_region(std::string_view buf, bool final, std::vector<Call>& calls, bool& done,
                      bool& failed) const override {
    const size_t e = buf.find(k_end);
    if (e == npos && !final) return 0;
    std::string_view body = e == npos ? buf : buf.substr(0, e);
    for (size_t i = skip_space(body); i < body.size(); i = skip_space(body, i)) {
      const size_t close = body.find(k_call_end, i);
      Call call;
      if (body.substr(i, k_call_begin.size()) != k_call_begin || close == npos ||
          !parse_call(body.substr(i + k_call_begin.size(), close - i - k_call_begin.size()), call)) {
        failed = true;
        calls.clear();
        return 0;
      }
      calls.push_back(std::move(call));
      i = close + k_call_end.size();
    }
    if (calls.empty()) {
      failed = true;
      return 0;
    }
    done = true;
    return e == npos ? buf.size() : e + k_end.size();
  }
};

}  // namespace

const std::vector<std::string>& tool_call_parser_names() {
  static const std::vector<std::string> names = {"llama3", "hermes", "qwen25", "mistral", "deepseekv3"};
  return names;
}

std::unique_ptr<ToolCallParser> make_tool_call_parser(const std::string& name) {
  if (name == "llama3") return std::make_unique<Llama3Parser>();
  if (name == "hermes" || name == "qwen25") return std::make_unique<HermesParser>();
  if (name == "mistral") return std::make_unique<MistralParser>();
  if (name == "deepseekv3") return std::make_unique<DeepSeekV3Parser>();
  std::string list;
  for (const std::string& n : tool_call_parser_names()) list += (list.empty() ? "" : ", ") + n;
  throw Error("--tool-call-parser: unknown parser '" + name + "' (one of " + list + ")");
}

}  // namespace seam
