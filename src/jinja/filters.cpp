#include "jinja/filters.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "jinja/args.h"
#include "jinja/error.h"
#include "jinja/evaluator.h"
#include "jinja/json_dump.h"
#include "jinja/methods.h"
#include "jinja/operators.h"
#include "jinja/string_methods.h"
#include "jinja/unicode.h"

namespace seam::jinja {

namespace {

// Filters that work on text take str(value), as jinja2's soft_str does (undefined -> ""), and so
// do their text arguments; a list's text is built held to the output size limit.
std::string text_of(const Renderer& r, const Value& v) { return v.str(r.config().limits.max_output_bytes); }

Value f_trim(Renderer& r, const Value& v, CallArgs& a) {
  const Value* chars = find_arg(a, 0, "chars");
  std::optional<std::string> set;
  if (chars && !chars->is_none()) set = text_of(r, *chars);
  return Value(py_strip(text_of(r, v), set, true, true));
}
Value f_upper(Renderer& r, const Value& v, CallArgs&) { return Value(upper(text_of(r, v))); }
Value f_lower(Renderer& r, const Value& v, CallArgs&) { return Value(lower(text_of(r, v))); }
Value f_capitalize(Renderer& r, const Value& v, CallArgs&) { return Value(py_capitalize(text_of(r, v))); }

// jinja2's title: upper-cases the first letter of each word, words being split at
// whitespace and - ( { [ <, and lower-cases the rest of the word.
Value f_title(Renderer& r, const Value& v, CallArgs&) {
  const std::string s = text_of(r, v);
  std::string out;
  bool word_start = true;
  size_t i = 0;
  while (i < s.size()) {
    const char32_t cp = utf8_next(s, i);
    const bool boundary = is_space(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
    utf8_append(out, boundary ? cp : word_start ? to_upper(cp) : to_lower(cp));
    word_start = boundary;
  }
  return Value(out);
}

Value f_replace(Renderer& r, const Value& v, CallArgs& a) {
  const Value* old_v = find_arg(a, 0, "old");
  const Value* new_v = find_arg(a, 1, "new");
  if (!old_v || !new_v) fail(ErrorKind::type, "replace(): expects 'old' and 'new'");
  return Value(py_replace(text_of(r, v), text_of(r, *old_v), text_of(r, *new_v), int_arg(a, 2, "count", -1, "replace"),
                          r.config().limits.max_output_bytes));
}

Value f_string(Renderer& r, const Value& v, CallArgs&) { return Value(text_of(r, v)); }
Value f_safe(Renderer&, const Value& v, CallArgs&) { return v; }

Value f_escape(Renderer& r, const Value& v, CallArgs&) {
  std::string out;
  for (char c : text_of(r, v)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return Value(out);
}

// The width is the template's (or its arguments'): py_center holds the padding to the output size limit.
Value f_center(Renderer& r, const Value& v, CallArgs& a) {
  return Value(py_center(text_of(r, v), int_arg(a, 0, "width", 80, "center"), true, true, " ",
                         r.config().limits.max_output_bytes));
}

Value f_indent(Renderer& r, const Value& v, CallArgs& a) {
  const size_t max_size = r.config().limits.max_output_bytes;
  const Value width = arg_or(a, 0, "width", Value(4));
  const bool first = arg_or(a, 1, "first", Value(false)).truthy();
  const bool blank = arg_or(a, 2, "blank", Value(false)).truthy();
  // An integer width is built as that many spaces (as jinja2 does), and the indentation repeats on
  // every line: both are held to the output size limit before they are allocated.
  if (!width.is_string()) check_size(size_t(std::max<int64_t>(0, width.as_int())), max_size);
  const std::string indention = width.is_string() ? width.as_string() : std::string(std::max<int64_t>(0, width.as_int()), ' ');
  // As jinja2: a newline is appended before splitting, so a trailing newline is kept.
  std::vector<std::string> lines = py_splitlines(text_of(r, v) + "\n", false);
  size_t text_size = lines.empty() ? 0 : lines.size() - 1;  // the newlines between the lines
  int64_t indented = first ? 1 : 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    text_size += lines[i].size();
    if (i > 0 && (blank || !lines[i].empty())) ++indented;
  }
  check_repeat_size(text_size, indention.size(), indented, max_size);
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + indention : "") + lines[i];
  } else if (!lines.empty()) {
    rv = lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
      rv += '\n';
      if (!lines[i].empty()) rv += indention + lines[i];
    }
  }
  if (first) rv = indention + rv;
  return Value(rv);
}

Value f_default(Renderer&, const Value& v, CallArgs& a) {
  const Value fallback = arg_or(a, 0, "default_value", Value(""));
  const bool boolean = arg_or(a, 1, "boolean", Value(false)).truthy();
  if (v.is_undefined() || (boolean && !v.truthy())) return fallback;
  return v;
}

Value f_length(Renderer&, const Value& v, CallArgs&) {
  switch (v.kind()) {
    case Kind::undefined: return Value(int64_t{0});
    case Kind::string: return Value(static_cast<int64_t>(utf8_length(v.as_string())));
    case Kind::list: return Value(static_cast<int64_t>(v.list_obj().items.size()));
    case Kind::dict: return Value(static_cast<int64_t>(v.dict_obj().items.size()));
    default: fail(ErrorKind::type, std::string("object of type '") + v.type_name() + "' has no len()");
  }
}

// Python's int() of a string: optional sign and surrounding whitespace, digits (and _ between them).
std::optional<int64_t> parse_int(const std::string& s, int base) {
  const std::string t = py_strip(s, std::nullopt, true, true);
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(t.c_str(), &end, base);
  if (errno || end != t.c_str() + t.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_float(const std::string& s) {
  const std::string t = py_strip(s, std::nullopt, true, true);
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  const double d = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size()) return std::nullopt;
  return d;
}

Value f_int(Renderer&, const Value& v, CallArgs& a) {
  const Value fallback = arg_or(a, 0, "default", Value(int64_t{0}));
  const int64_t base = int_arg(a, 1, "base", 10, "int");
  require_defined(v);
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) return std::isfinite(v.as_double()) ? Value(static_cast<int64_t>(v.as_double())) : fallback;
  if (v.is_string()) {
    if (auto i = parse_int(v.as_string(), static_cast<int>(base))) return Value(*i);
    if (auto d = parse_float(v.as_string()); d && std::isfinite(*d)) return Value(static_cast<int64_t>(*d));
  }
  return fallback;
}

Value f_float(Renderer&, const Value& v, CallArgs& a) {
  const Value fallback = arg_or(a, 0, "default", Value(0.0));
  require_defined(v);
  if (v.is_number()) return Value(v.as_double());
  if (v.is_string())
    if (auto d = parse_float(v.as_string())) return Value(*d);
  return fallback;
}

Value f_abs(Renderer&, const Value& v, CallArgs&) {
  require_defined(v);
  if (v.is_float()) return Value(std::fabs(v.as_double()));
  if (v.is_int() || v.is_bool()) return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
  fail(ErrorKind::type, std::string("bad operand type for abs(): '") + v.type_name() + "'");
}

// Python's round(x, n): the double's exact value rounded half to even, which is
// what printf's correctly rounded %.*f gives.
double round_half_even(double x, int64_t precision) {
  if (!std::isfinite(x)) return x;
  char buf[512];
  if (precision >= 0) {
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(std::min<int64_t>(precision, 300)), x);
    return std::strtod(buf, nullptr);
  }
  const double scale = std::pow(10.0, static_cast<double>(-precision));
  return std::nearbyint(x / scale) * scale;
}

Value f_round(Renderer& r, const Value& v, CallArgs& a) {
  const int64_t precision = int_arg(a, 0, "precision", 0, "round");
  const std::string method = text_of(r, arg_or(a, 1, "method", Value("common")));
  require_defined(v);
  if (!v.is_number()) fail(ErrorKind::type, std::string("round(): expected a number, got ") + v.type_name());
  const double x = v.as_double();
  if (method == "common") {
    if (!v.is_float()) return Value(v.as_int());  // round(int, n) keeps the int
    return Value(round_half_even(x, precision));
  }
  const double scale = std::pow(10.0, static_cast<double>(precision));
  if (method == "ceil") return Value(std::ceil(x * scale) / scale);
  if (method == "floor") return Value(std::floor(x * scale) / scale);
  fail(ErrorKind::type, "method must be 'common', 'ceil' or 'floor'");
}

Value f_tojson(Renderer& r, const Value& v, CallArgs& a) {
  const size_t max_size = r.config().limits.max_output_bytes;
  JsonDumpOptions o;
  const Value indent = arg_or(a, 0, "indent", Value::none());
  if (indent.is_string()) o.indent = indent.as_string();
  else if (indent.is_int()) {
    check_size(size_t(std::max<int64_t>(0, indent.as_int())), max_size);  // the template's integer, built as spaces
    o.indent = std::string(std::max<int64_t>(0, indent.as_int()), ' ');
  } else if (!indent.is_none()) {
    fail(ErrorKind::type, "tojson(): indent must be an integer, a string or None");
  }
  for (const auto& [k, val] : a.kwargs) {
    if (k == "separators" && !val.is_none()) {
      if (!val.is_list() || val.list_obj().items.size() != 2)
        fail(ErrorKind::type, "tojson(): separators must be an (item_separator, key_separator) pair");
      o.item_separator = text_of(r, val.list_obj().items[0]);
      o.key_separator = text_of(r, val.list_obj().items[1]);
    } else if (k == "sort_keys") {
      o.sort_keys = val.truthy();
    } else if (k == "ensure_ascii") {
      o.ensure_ascii = val.truthy();
    } else if (k != "indent" && k != "separators") {
      fail(ErrorKind::type, "tojson() got an unexpected keyword argument '" + k + "'");
    }
  }
  return Value(json_dumps(v, o, max_size));
}

// jinja2's do_format: value % (kwargs or args), so keyword arguments are the mapping of
// %(key)s fields; both at once are refused.
Value f_format(Renderer& r, const Value& v, CallArgs& a) {
  if (!a.args.empty() && !a.kwargs.empty())
    fail(ErrorKind::type, "can't handle positional and keyword arguments at the same time");
  Value values;
  if (!a.kwargs.empty()) {
    values = Value::dict();
    for (const auto& [k, x] : a.kwargs) values.dict_obj().set(dict_key(Value(k)), x);
  } else {
    values = Value::tuple(a.args);
  }
  return binary_op("%", Value(text_of(r, v)), values, r.config().limits.max_output_bytes);
}

Value f_wordcount(Renderer& r, const Value& v, CallArgs&) {
  return Value(static_cast<int64_t>(py_split(text_of(r, v), std::nullopt, -1, false).size()));
}

Value f_pprint(Renderer& r, const Value& v, CallArgs&) { return Value(v.repr(r.config().limits.max_output_bytes)); }

// attr(name) is Python's getattr only: a dict's keys are not its attributes (its methods are).
Value f_attr(Renderer& r, const Value& v, CallArgs& a) {
  const size_t max_size = r.config().limits.max_output_bytes;
  const std::string name = string_arg(a, 0, "name", "attr");
  if (v.is_dict() && v.dict_obj().flavor == DictFlavor::dict && v.dict_obj().find(name)) {
    Value method = get_attribute(Value::dict(), name, max_size);
    return method.is_undefined() ? Value::undefined("'dict object' has no attribute '" + name + "'")
                                 : get_attribute(v, name, max_size);
  }
  return get_attribute(v, name, max_size);
}

Value f_truncate(Renderer& r, const Value& v, CallArgs& a) {
  const std::string s = text_of(r, v);
  const int64_t length = int_arg(a, 0, "length", 255, "truncate");
  const bool killwords = arg_or(a, 1, "killwords", Value(false)).truthy();
  const std::string end = text_of(r, arg_or(a, 2, "end", Value("...")));
  const int64_t leeway = int_arg(a, 3, "leeway", 5, "truncate");
  // jinja2 asserts leeway >= 0; a negative one would also cut past the end of the text below.
  if (leeway < 0) fail(ErrorKind::type, "expected leeway >= 0, got " + std::to_string(leeway));
  std::vector<char32_t> cps = utf8_decode(s);
  // length + leeway may pass what int64 holds (truncate(2**63 - 1)): compare without the sum.
  const int64_t n = static_cast<int64_t>(cps.size());
  if (n - leeway <= length) return Value(s);
  const int64_t end_length = static_cast<int64_t>(utf8_length(end));
  const int64_t keep = length <= end_length ? 0 : std::min(length - end_length, n);
  std::string head = utf8_encode(std::vector<char32_t>(cps.begin(), cps.begin() + keep));
  if (!killwords) {
    const size_t sp = head.rfind(' ');
    if (sp != std::string::npos) head.resize(sp);
  }
  return Value(head + end);
}

const std::unordered_map<std::string, FilterFn>& table() {
  static const std::unordered_map<std::string, FilterFn> t = {
      {"trim", f_trim},       {"upper", f_upper},       {"lower", f_lower},         {"capitalize", f_capitalize},
      {"title", f_title},     {"replace", f_replace},   {"string", f_string},       {"safe", f_safe},
      {"escape", f_escape},   {"e", f_escape},          {"forceescape", f_escape},  {"center", f_center},
      {"indent", f_indent},   {"default", f_default},   {"d", f_default},           {"length", f_length},
      {"count", f_length},    {"int", f_int},           {"float", f_float},         {"abs", f_abs},
      {"round", f_round},     {"tojson", f_tojson},     {"format", f_format},       {"wordcount", f_wordcount},
      {"pprint", f_pprint},   {"attr", f_attr},         {"truncate", f_truncate},
  };
  return t;
}

}  // namespace

FilterFn find_filter(const std::string& name) {
  auto it = table().find(name);
  return it != table().end() ? it->second : find_sequence_filter(name);
}

}  // namespace seam::jinja
