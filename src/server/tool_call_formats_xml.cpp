// The tool-call formats that write each parameter as tagged raw text, typed by the request's tools
// (tool_call_formats.h's ToolParameterTypes):
//   qwen3_coder  <tool_call><function=NAME><parameter=KEY>VALUE</parameter>...</function></tool_call>
//                (Qwen3-Coder; newlines around each VALUE are not part of it; a bare <function=...>
//                without <tool_call> is a call too)
//   glm45        <tool_call>NAME\n<arg_key>KEY</arg_key>\n<arg_value>VALUE</arg_value>...</tool_call>
//                (GLM-4.5 / 4.6; glm47: the same without the newline after NAME)
#include <algorithm>
#include <cctype>

#include "server/tool_call_formats.h"

namespace seam::tool_call_formats {

namespace {

using ojson = nlohmann::ordered_json;
constexpr size_t npos = std::string::npos;


std::string trimmed(std::string_view s) {
  const size_t b = skip_space(s);
  size_t e = s.size();
  while (e > b && is_space(s[e - 1])) --e;
  return std::string(s.substr(b, e - b));
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_integer_text(const std::string& s) {
  size_t i = s.size() > 1 && (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

// The tool-call region's text up to `end_marker` (exclusive), with the bytes it takes including the
// marker; npos while the marker has not come (at `final`, the whole rest, unclosed).
size_t region_end(std::string_view buf, std::string_view end_marker, bool final, std::string_view& body) {
  const size_t e = buf.find(end_marker);
  if (e == npos) {
    if (!final) return npos;
    body = buf;
    return buf.size();
  }
  body = buf.substr(0, e);
  return e + end_marker.size();
}

// <tool_call> around one or more <function=NAME>...</function>, or a bare <function=...>.
class Qwen3CoderParser : public ToolCallParser {
 public:
  explicit Qwen3CoderParser(const ojson& tools) : types_(tools) {}

 private:
  static constexpr std::string_view k_begin = "<tool_call>", k_end = "</tool_call>";
  static constexpr std::string_view k_function = "<function=", k_function_end = "</function>";
  static constexpr std::string_view k_param = "<parameter=", k_param_end = "</parameter>";

  size_t find_start(std::string_view buf, bool, size_t& marker_len, size_t& held) const override {
    size_t len_a = 0, held_a = 0, len_b = 0, held_b = 0;
    const size_t a = find_marker(buf, k_begin, len_a, held_a);
    const size_t b = find_marker(buf, k_function, len_b, held_b);
    held = std::max(held_a, held_b);
    if (a == npos && b == npos) return npos;
    // Which marker opened the region decides where it ends (parse_region runs on the text after it).
    bare_ = b < a;
    marker_len = bare_ ? len_b : len_a;
    return std::min(a, b);
  }

  // One function after "<function=": NAME>, then parameters, then </function> (or the end of `s`).
  bool parse_function(std::string_view s, Call& call) const {
    const size_t gt = s.find('>');
    if (gt == npos) return false;
    call.name = trimmed(s.substr(0, gt));
    if (call.name.empty() || call.name.find_first_of("<\n") != npos) return false;
    ojson args = ojson::object();
    size_t i = gt + 1;
    for (;;) {
      i = skip_space(s, i);
      if (i == s.size() || s.substr(i, k_function_end.size()) == k_function_end) break;
      if (s.substr(i, k_param.size()) != k_param) return false;
      const size_t name_end = s.find('>', i);
      if (name_end == npos) return false;
      const std::string key = trimmed(s.substr(i + k_param.size(), name_end - i - k_param.size()));
      if (key.empty()) return false;
      const size_t v = name_end + 1;
      // A value ends at </parameter>, or (unclosed) at the next <parameter= or </function>.
      const size_t close = std::min({s.find(k_param_end, v), s.find(k_param, v), s.find(k_function_end, v), s.size()});
      std::string value(s.substr(v, close - v));
      if (!value.empty() && value.front() == '\n') value.erase(0, 1);
      if (!value.empty() && value.back() == '\n') value.pop_back();
      args[key] = parse_json(types_.value_json(call.name, key, value));
      i = s.substr(close, k_param_end.size()) == k_param_end ? close + k_param_end.size() : close;
    }
    call.arguments = dump_json(args);
    return true;
  }

  size_t parse_region(std::string_view buf, bool final, std::vector<Call>& calls, bool& done,
                      bool& failed) const override {
    std::string_view body;
    const size_t used = region_end(buf, bare_ ? k_function_end : k_end, final, body);
    if (used == npos) return 0;
    if (bare_) {  // body: one function's text after its marker
      Call call;
      if (!parse_function(body, call)) {
        failed = true;
        return 0;
      }
      calls.push_back(std::move(call));
      done = true;
      return used;
    }
    for (size_t i = skip_space(body); i < body.size(); i = skip_space(body, i)) {
      Call call;
      const size_t close = body.find(k_function_end, i);
      const size_t stop = close == npos ? body.size() : close;
      if (body.substr(i, k_function.size()) != k_function ||
          !parse_function(body.substr(i + k_function.size(), stop - i - k_function.size()), call)) {
        failed = true;
        calls.clear();
        return 0;
      }
      calls.push_back(std::move(call));
      i = close == npos ? body.size() : close + k_function_end.size();
    }
    if (calls.empty()) {
      failed = true;
      return 0;
    }
    done = true;
    return used;
  }

  ToolParameterTypes types_;
  mutable bool bare_ = false;  // the current region opened at <function= (no <tool_call>)
};

// <tool_call>NAME [\n] (<arg_key>K</arg_key> <arg_value>V</arg_value>)* </tool_call>: one region a call.
class Glm45Parser : public ToolCallParser {
 public:
  explicit Glm45Parser(const ojson& tools) : types_(tools) {}

 private:
  static constexpr std::string_view k_begin = "<tool_call>", k_end = "</tool_call>";
  static constexpr std::string_view k_key = "<arg_key>", k_key_end = "</arg_key>";
  static constexpr std::string_view k_value = "<arg_value>", k_value_end = "</arg_value>";

  size_t find_start(std::string_view buf, bool, size_t& marker_len, size_t& held) const override {
    return find_marker(buf, k_begin, marker_len, held);
  }

  size_t parse_region(std::string_view buf, bool final, std::vector<Call>& calls, bool& done,
                      bool& failed) const override {
    std::string_view body;
    const size_t used = region_end(buf, k_end, final, body);
    if (used == npos) return 0;
    Call call;
    const size_t name_end = std::min(body.find('\n'), body.find(k_key));
    call.name = trimmed(body.substr(0, name_end == npos ? body.size() : name_end));
    if (call.name.empty() || call.name.find_first_of("<> \t") != npos) {
      failed = true;
      return 0;
    }
    ojson args = ojson::object();
    for (size_t i = skip_space(body, name_end == npos ? body.size() : name_end); i < body.size(); i = skip_space(body, i)) {
      const size_t key_end = body.find(k_key_end, i);
      const size_t v = key_end == npos ? npos : skip_space(body, key_end + k_key_end.size());
      const size_t value_end = v == npos ? npos : body.find(k_value_end, v);
      if (body.substr(i, k_key.size()) != k_key || key_end == npos || body.substr(v, k_value.size()) != k_value ||
          value_end == npos) {
        failed = true;
        return 0;
      }
      const std::string key = trimmed(body.substr(i + k_key.size(), key_end - i - k_key.size()));
      const std::string value(body.substr(v + k_value.size(), value_end - v - k_value.size()));
      args[key] = parse_json(types_.value_json(call.name, key, value));
      i = value_end + k_value_end.size();
    }
    call.arguments = dump_json(args);
    calls.push_back(std::move(call));
    done = true;
    return used;
  }

  ToolParameterTypes types_;
};

}  // namespace

ToolParameterTypes::ToolParameterTypes(const ojson& tools) {
  if (!tools.is_array()) return;
  for (const ojson& t : tools) {
    if (!t.is_object() || !t.contains("function") || !t["function"].is_object()) continue;
    const ojson& f = t["function"];
    if (!f.contains("name") || !f["name"].is_string() || types_.count(f["name"].get<std::string>())) continue;
    auto& params = types_[f["name"].get<std::string>()];  // the first tool of a name, as a lookup finds it
    if (!f.contains("parameters") || !f["parameters"].is_object()) continue;
    const ojson& p = f["parameters"];
    const ojson& props = p.contains("properties") && p["properties"].is_object() ? p["properties"] : p;
    for (const auto& [name, schema] : props.items())
      if (schema.is_object()) params[name] = declared_type(schema);
  }
}

std::string ToolParameterTypes::declared_type(const ojson& schema) {
  const ojson* s = &schema;
  for (const char* k : {"anyOf", "oneOf"})  // the first branch that says
    if (!s->contains("type") && s->contains(k) && (*s)[k].is_array())
      for (const ojson& b : (*s)[k])
        if (b.is_object() && b.contains("type") && !(b["type"].is_string() && b["type"] == "null")) {
          s = &b;
          break;
        }
  if (s->contains("type")) {
    const ojson& ty = (*s)["type"];
    if (ty.is_string()) return lower(ty.get<std::string>());
    if (ty.is_array())
      for (const ojson& x : ty)
        if (x.is_string() && x != "null") return lower(x.get<std::string>());
    return "";
  }
  if (s->contains("enum") && (*s)["enum"].is_array() && !(*s)["enum"].empty())
    return (*s)["enum"][0].is_string() ? "string" : "";
  if (s->contains("properties")) return "object";
  if (s->contains("items")) return "array";
  return "";
}

std::string ToolParameterTypes::value_json(const std::string& function, const std::string& param,
                                           const std::string& raw) const {
  const std::string text = trimmed(raw);
  if (lower(text) == "null") return "null";
  const auto f = types_.find(function);
  const auto t = f == types_.end() ? std::map<std::string, std::string>::const_iterator() : f->second.find(param);
  const std::string type = f == types_.end() || t == f->second.end() ? "" : t->second;
  const std::string as_string = dump_json(ojson(raw));
  if (type == "string" || type == "str" || type == "text") return as_string;
  if (type.rfind("int", 0) == 0) {
    if (!is_integer_text(text)) return as_string;
    const ojson j = parse_json(text[0] == '+' ? std::string_view(text).substr(1) : std::string_view(text));
    return j.is_number_integer() ? dump_json(j) : as_string;  // past 64 bits nlohmann reads a float: kept as text
  }
  if (type.rfind("num", 0) == 0 || type.rfind("float", 0) == 0) {
    const ojson j = parse_json(text);  // "5" stays an integer, "5.0" a float, as Python's conversion
    return j.is_number() ? dump_json(j) : as_string;
  }
  if (type == "boolean" || type == "bool") {
    const std::string l = lower(text);
    return l == "true" || l == "false" ? l : as_string;
  }
  const ojson j = parse_json(text);
  if (type == "object" || type == "dict") return j.is_object() ? dump_json(j) : as_string;
  if (type == "array" || type == "list") return j.is_array() ? dump_json(j) : as_string;
  return j.is_object() || j.is_array() ? dump_json(j) : as_string;
}

std::unique_ptr<ToolCallParser> make_qwen3_coder_parser(const ojson& tools) {
  return std::make_unique<Qwen3CoderParser>(tools);
}

std::unique_ptr<ToolCallParser> make_glm45_parser(const ojson& tools) { return std::make_unique<Glm45Parser>(tools); }

}  // namespace seam::tool_call_formats
