// The tool-call formats of ToolCallParser (see tool_call_parser.h) whose calls are JSON, by
// sglang's names, and the registry of every format.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_parse.h"
#include "server/tool_call_formats.h"
#include "server/tool_call_parser.h"

namespace seam {

namespace {

using ojson = nlohmann::ordered_json;
using tool_call_detail::json_value_end;
using tool_call_formats::dump_json;
using tool_call_formats::find_marker;
using tool_call_formats::is_space;
using tool_call_formats::parse_json;
using tool_call_formats::skip_space;
constexpr size_t npos = std::string::npos;

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
    call.arguments = dump_json(j[key]);
  }
  return true;
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
    return tool_call_formats::find_opener_or_marker(buf, at_output_start, '{', k_tag, marker_len, held);
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

// A block of calls: BEGIN, then per call CALL_BEGIN <the call's text> CALL_END (whitespace between),
// then END; one region for the block (DeepSeek V3 / V3.1, Kimi K2). Each format reads one call's text.
class CallBlockParser : public ToolCallParser {
 protected:
  struct Markers {
    std::string_view begin, end, call_begin, call_end;
  };
  explicit CallBlockParser(Markers m) : m_(m) {}
  // One call's text between its begin and end markers; false when it is not a call.
  virtual bool parse_call(std::string_view text, Call& call) const = 0;

 private:
  size_t find_start(std::string_view buf, bool, size_t& marker_len, size_t& held) const override {
    return find_marker(buf, m_.begin, marker_len, held);
  }
  size_t parse_region(std::string_view buf, bool final, std::vector<Call>& calls, bool& done,
                      bool& failed) const override {
    const size_t e = buf.find(m_.end);
    if (e == npos && !final) return 0;
    std::string_view body = e == npos ? buf : buf.substr(0, e);
    for (size_t i = skip_space(body); i < body.size(); i = skip_space(body, i)) {
      const size_t close = body.find(m_.call_end, i);
      Call call;
      if (body.substr(i, m_.call_begin.size()) != m_.call_begin || close == npos ||
          !parse_call(body.substr(i + m_.call_begin.size(), close - i - m_.call_begin.size()), call)) {
        failed = true;
        calls.clear();
        return 0;
      }
      calls.push_back(std::move(call));
      i = close + m_.call_end.size();
    }
    if (calls.empty()) {
      failed = true;
      return 0;
    }
    done = true;
    return e == npos ? buf.size() : e + m_.end.size();
  }

  Markers m_;
};

// DeepSeek V3: <｜tool▁calls▁begin｜> then per call
// <｜tool▁call▁begin｜>TYPE<｜tool▁sep｜>NAME\n```json\nARGS\n```<｜tool▁call▁end｜>, then
// <｜tool▁calls▁end｜>. V3.1 (`v31`) writes each call as
// <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>.
class DeepSeekV3Parser : public CallBlockParser {
 public:
  explicit DeepSeekV3Parser(bool v31)
      : CallBlockParser({"<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>"}),
        v31_(v31) {}

 private:
  static constexpr std::string_view k_sep = "<｜tool▁sep｜>";
  bool v31_;

  bool parse_call(std::string_view s, Call& call) const override {
    const size_t sep = s.find(k_sep);
    if (sep == npos) return false;
    if (v31_) {
      call.name = std::string(s.substr(0, sep));
      const ojson args = parse_json(s.substr(sep + k_sep.size()));
      if (call.name.empty() || call.name.find_first_of("<\n") != npos || !args.is_object()) return false;
      call.arguments = dump_json(args);
      return true;
    }
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
    call.arguments = dump_json(args);
    return true;
  }
};

// Kimi K2: <|tool_calls_section_begin|> then per call
// <|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>ARGS<|tool_call_end|>, then
// <|tool_calls_section_end|>.
class KimiK2Parser : public CallBlockParser {
 public:
  KimiK2Parser()
      : CallBlockParser({"<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "<|tool_call_begin|>",
                         "<|tool_call_end|>"}) {}

 private:
  static constexpr std::string_view k_args = "<|tool_call_argument_begin|>";

  // "functions.get_weather:0" -> "get_weather" (the id's namespace and call index dropped).
  static std::string name_of(std::string_view id) {
    const size_t b = id.find_first_not_of(" \t\n\r"), e = id.find_last_not_of(" \t\n\r");
    if (b == npos) return "";
    id = id.substr(b, e - b + 1);
    if (id.substr(0, 10) == "functions.") id.remove_prefix(10);
    const size_t colon = id.rfind(':');
    if (colon != npos) id = id.substr(0, colon);
    return std::string(id);
  }
  bool parse_call(std::string_view s, Call& call) const override {
    const size_t args = s.find(k_args);
    if (args == npos) return false;
    call.name = name_of(s.substr(0, args));
    const ojson j = parse_json(s.substr(args + k_args.size()));
    if (call.name.empty() || !j.is_object()) return false;
    call.arguments = dump_json(j);
    return true;
  }
};

}  // namespace

namespace tool_call_formats {

ojson parse_json(std::string_view text) {
  if (json_nesting_depth(text) > k_max_json_depth) return ojson(ojson::value_t::discarded);
  return ojson::parse(text.begin(), text.end(), nullptr, false);
}

std::string dump_json(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

}  // namespace tool_call_formats

const std::vector<std::string>& tool_call_parser_names() {
  static const std::vector<std::string> names = {"llama3",      "hermes",   "qwen25", "qwen3_coder", "mistral",
                                                 "deepseekv3",  "deepseekv31", "kimi_k2", "glm45", "glm47",
                                                 "pythonic"};
  return names;
}

std::unique_ptr<ToolCallParser> make_tool_call_parser(const std::string& name, const nlohmann::ordered_json& tools) {
  if (name == "llama3") return std::make_unique<Llama3Parser>();
  if (name == "hermes" || name == "qwen25") return std::make_unique<HermesParser>();
  if (name == "qwen3_coder") return tool_call_formats::make_qwen3_coder_parser(tools);
  if (name == "mistral") return std::make_unique<MistralParser>();
  if (name == "deepseekv3" || name == "deepseekv31") return std::make_unique<DeepSeekV3Parser>(name == "deepseekv31");
  if (name == "kimi_k2") return std::make_unique<KimiK2Parser>();
  if (name == "glm45" || name == "glm47") return tool_call_formats::make_glm45_parser(tools);
  if (name == "pythonic") return tool_call_formats::make_pythonic_parser();
  std::string list;
  for (const std::string& n : tool_call_parser_names()) list += (list.empty() ? "" : ", ") + n;
  throw Error("--tool-call-parser: unknown parser '" + name + "' (one of " + list + ")");
}

}  // namespace seam
