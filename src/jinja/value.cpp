#include "jinja/value.h"

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string_view>

#include "jinja/error.h"
#include "jinja/unicode.h"

namespace seam::jinja {

const Value* DictObj::find(const std::string& key) const {
  for (const auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

Value* DictObj::find(const std::string& key) {
  for (auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

void DictObj::set(const std::string& key, Value value) {
  if (Value* existing = find(key)) {
    *existing = std::move(value);
    return;
  }
  items.emplace_back(key, std::move(value));
}

bool dict_key_hashable(const Value& k) {
  return k.is_string() || k.is_int() || k.is_bool() || k.is_float() || k.is_none();
}

namespace {
// A stored non-str key: the tag byte, the kind ('i' int, 'f' float, 'n' None), the value's text.
constexpr char kKeyTag = '\x01';
std::string tagged_key(char kind, const std::string& body) { return std::string(1, kKeyTag) + kind + body; }
}  // namespace

std::string dict_key(const Value& k) {
  if (k.is_string()) return k.as_string();
  if (k.is_int() || k.is_bool()) return tagged_key('i', std::to_string(k.as_int()));
  if (k.is_float()) {
    const double d = k.as_double();
    if (std::isfinite(d) && d == std::floor(d) && d >= -0x1p63 && d < 0x1p63) return tagged_key('i', std::to_string(int64_t(d)));
    return tagged_key('f', format_float(d));
  }
  if (k.is_none()) return tagged_key('n', "");
  fail(ErrorKind::type, std::string("unhashable type: '") + k.type_name() + "'");
}

Value dict_key_value(const std::string& stored) {
  if (stored.empty() || stored[0] != kKeyTag || stored.size() < 2) return Value(stored);
  // A str key that merely starts with the tag byte (from JSON) decodes as itself when its body is
  // not a whole number / float text: never an exception.
  const std::string body = stored.substr(2);
  const char* b = body.c_str();
  char* end = nullptr;
  errno = 0;
  switch (stored[1]) {
    case 'i': {
      const long long v = std::strtoll(b, &end, 10);
      if (!body.empty() && errno == 0 && *end == 0) return Value(int64_t(v));
      break;
    }
    case 'f': {
      const double v = std::strtod(b, &end);
      if (!body.empty() && *end == 0) return Value(v);
      break;
    }
    case 'n':
      if (body.empty()) return Value::none();
      break;
    default: break;
  }
  return Value(stored);
}

std::string dict_key_json(const std::string& stored) {
  if (stored.empty() || stored[0] != kKeyTag || stored.size() < 2) return stored;
  const Value v = dict_key_value(stored);
  if (v.is_string()) return stored;  // a str key that only starts with the tag byte
  return v.is_none() ? "null" : v.repr();
}

Value Value::list(std::vector<Value> items) {
  auto l = std::make_shared<ListObj>();
  l->items = std::move(items);
  return Value(std::move(l));
}

Value Value::tuple(std::vector<Value> items) {
  Value v = list(std::move(items));
  v.list_->is_tuple = true;
  return v;
}

Value Value::dict() { return Value(std::make_shared<DictObj>()); }

Value Value::function(std::string name, std::function<Value(CallArgs&)> fn) {
  auto f = std::make_shared<FunctionObj>();
  f->name = std::move(name);
  f->fn = std::move(fn);
  return Value(std::move(f));
}

namespace {
template <typename Json>
Value value_from_json(const Json& j) {
  using Value = seam::jinja::Value;
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value::none();
    case nlohmann::json::value_t::boolean: return Value(j.template get<bool>());
    case nlohmann::json::value_t::number_integer: return Value(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      const uint64_t u = j.template get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<int64_t>(u));
      return Value(static_cast<double>(u));  // beyond int64: Python would keep it exact; rare
    }
    case nlohmann::json::value_t::number_float: return Value(j.template get<double>());
    case nlohmann::json::value_t::string: return Value(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(value_from_json(e));
      return Value::list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      auto d = std::make_shared<DictObj>();
      d->items.reserve(j.size());
      // JSON object keys are unique, so no lookup is needed while building.
      for (auto it = j.begin(); it != j.end(); ++it) d->items.emplace_back(it.key(), value_from_json(it.value()));
      return Value(std::move(d));
    }
    default: return Value::none();
  }
}
}  // namespace

Value Value::from_json(const nlohmann::json& j) { return value_from_json(j); }
Value Value::from_json(const nlohmann::ordered_json& j) { return value_from_json(j); }

bool Value::truthy() const {
  switch (kind_) {
    case Kind::undefined:
    case Kind::none: return false;
    case Kind::boolean:
    case Kind::integer: return int_ != 0;
    case Kind::floating: return float_ != 0.0;
    case Kind::string: return !str_.empty();
    case Kind::list: return !list_->items.empty();
    case Kind::dict: return dict_->flavor != DictFlavor::dict || !dict_->items.empty();
    case Kind::function: return true;
  }
  return false;
}

const char* Value::type_name() const {
  switch (kind_) {
    case Kind::undefined: return "Undefined";
    case Kind::none: return "NoneType";
    case Kind::boolean: return "bool";
    case Kind::integer: return "int";
    case Kind::floating: return "float";
    case Kind::string: return "str";
    case Kind::list: return "list";
    case Kind::dict:
      return dict_->flavor == DictFlavor::namespace_ ? "Namespace"
             : dict_->flavor == DictFlavor::loop     ? "LoopContext"
                                                     : "dict";
    case Kind::function: return "function";
  }
  return "object";
}

namespace {

// Writes Python's repr of a value into one string, held to `max_size` at each piece it adds: a
// list's items are shared, so its text can be far larger than the memory it is printed from, and
// it must fail as soon as it passes the limit, not once it is whole. Invariant: out_.size() <=
// max_size_ after every append.
class ReprWriter {
 public:
  explicit ReprWriter(size_t max_size) : max_size_(max_size) {}

  std::string take() { return std::move(out_); }

  void value(const Value& v, int depth) {
    if (depth > 200) fail(ErrorKind::limit, "a value nested more than 200 deep cannot be printed");
    switch (v.kind()) {
      case Kind::undefined: return;
      case Kind::none: return append("None");
      case Kind::boolean: return append(v.as_bool() ? "True" : "False");
      case Kind::integer: return append(std::to_string(v.as_int()));
      case Kind::floating: return append(format_float(v.as_double()));
      case Kind::string: return string(v.as_string());
      case Kind::list: return list(v.list_obj(), depth);
      case Kind::dict: return dict(v.dict_obj(), depth);
      case Kind::function: return append("<function " + v.function_obj().name + ">");
    }
  }

 private:
  // A str's repr is at least its text and two quotes: checked before the escaped copy is made.
  void string(const std::string& s) {
    check_size(out_.size() + s.size() + 2, max_size_);
    append(repr_string(s));
  }

  void list(const ListObj& l, int depth) {
    append(l.is_tuple ? "(" : "[");
    for (size_t i = 0; i < l.items.size(); ++i) {
      if (i) append(", ");
      value(l.items[i], depth + 1);
    }
    if (l.is_tuple && l.items.size() == 1) append(",");
    append(l.is_tuple ? ")" : "]");
  }

  void dict(const DictObj& d, int depth) {
    if (d.flavor == DictFlavor::loop) return append("<LoopContext>");
    const bool ns = d.flavor == DictFlavor::namespace_;
    append(ns ? "<Namespace {" : "{");
    for (size_t i = 0; i < d.items.size(); ++i) {
      if (i) append(", ");
      // A namespace's keys are attribute names, always str; a dict's may be numbers or None.
      if (ns) string(d.items[i].first);
      else value(dict_key_value(d.items[i].first), depth + 1);
      append(": ");
      value(d.items[i].second, depth + 1);
    }
    append(ns ? "}>" : "}");
  }

  void append(std::string_view text) {
    check_size(out_.size() + text.size(), max_size_);
    out_ += text;
  }

  size_t max_size_;
  std::string out_;
};

}  // namespace

std::string Value::str(size_t max_size) const {
  switch (kind_) {
    case Kind::undefined: return "";
    case Kind::string: return str_;
    default: return repr(max_size);
  }
}

std::string Value::repr(size_t max_size) const {
  ReprWriter writer(max_size);
  writer.value(*this, 0);
  return writer.take();
}

size_t copy_bytes(const Value& v) {
  const size_t text = v.is_string() ? v.as_string().size() : v.is_undefined() ? v.undefined_hint().size() : 0;
  return sizeof(Value) + text;
}

size_t copy_bytes(const std::vector<Value>& items) {
  size_t n = 0;
  for (const Value& v : items) n += copy_bytes(v);
  return n;
}

std::string format_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  // sci = [-]D[.DDD]e(+|-)XX: split into sign, digits and decimal exponent.
  std::string sign;
  size_t p = 0;
  if (sci[0] == '-') {
    sign = "-";
    p = 1;
  }
  const size_t e_pos = sci.find('e');
  std::string digits;
  for (size_t i = p; i < e_pos; ++i)
    if (sci[i] != '.') digits += sci[i];
  const int exp = std::stoi(sci.substr(e_pos + 1));
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  // Python's repr uses fixed notation for 1e-4 <= |d| < 1e16, scientific otherwise.
  if (exp >= -4 && exp < 16) {
    std::string out;
    if (exp >= 0) {
      std::string int_part = digits.substr(0, std::min<size_t>(digits.size(), exp + 1));
      while (static_cast<int>(int_part.size()) < exp + 1) int_part += '0';
      std::string frac = digits.size() > static_cast<size_t>(exp + 1) ? digits.substr(exp + 1) : "0";
      out = int_part + "." + frac;
    } else {
      out = "0." + std::string(-exp - 1, '0') + digits;
    }
    return sign + out;
  }
  std::string mant = digits.substr(0, 1);
  if (digits.size() > 1) mant += "." + digits.substr(1);
  const int a = exp < 0 ? -exp : exp;
  return sign + mant + "e" + (exp < 0 ? "-" : "+") + (a < 10 ? "0" : "") + std::to_string(a);
}

std::string repr_string(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  size_t i = 0;
  while (i < s.size()) {
    const size_t start = i;
    const char32_t cp = utf8_next(s, i);
    if (cp == '\\') {
      out += "\\\\";
    } else if (cp == static_cast<char32_t>(quote)) {
      out += '\\';
      out += quote;
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (!is_printable(cp)) {
      char buf[16];
      if (cp < 0x100) std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
      else if (cp < 0x10000) std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      else std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(s, start, i - start);
    }
  }
  out += quote;
  return out;
}

}  // namespace seam::jinja
