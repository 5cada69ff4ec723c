#include "jinja/methods.h"

#include <algorithm>

#include "jinja/args.h"
#include "jinja/error.h"
#include "jinja/format_spec.h"
#include "jinja/operators.h"
#include "jinja/string_methods.h"
#include "jinja/unicode.h"

namespace seam::jinja {

namespace {

std::optional<std::string> optional_string(const CallArgs& a, size_t index, const char* name, const char* fn) {
  const Value* v = find_arg(a, index, name);
  if (!v || v->is_none()) return std::nullopt;
  if (!v->is_string()) fail(ErrorKind::type, std::string(fn) + "() argument must be str or None, not " + v->type_name());
  return v->as_string();
}

Value string_list(const std::vector<std::string>& parts) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (const auto& p : parts) items.emplace_back(p);
  return Value::list(std::move(items));
}

// The [start, end) window of str.find / count / startswith ... (positional arguments `first` and
// `first + 1`, None or absent for the ends), in code points with Python's slice rules. `past_end`:
// start lies past the string, where Python finds nothing, not even an empty needle.
struct Window {
  std::string text;
  int64_t start = 0;
  bool past_end = false;
};
Window window_of(const std::string& s, const CallArgs& a, size_t first) {
  const Value* b = first < a.args.size() ? &a.args[first] : nullptr;
  const Value* e = first + 1 < a.args.size() ? &a.args[first + 1] : nullptr;
  if ((!b || b->is_none()) && (!e || e->is_none())) return {s, 0, false};
  const std::vector<char32_t> cps = utf8_decode(s);
  const int64_t n = static_cast<int64_t>(cps.size());
  auto index = [&](const Value* v, int64_t fallback) {
    if (!v || v->is_none()) return fallback;
    if (!v->is_int() && !v->is_bool())
      fail(ErrorKind::type, std::string("slice indices must be integers or None, not ") + v->type_name());
    int64_t i = v->as_int();
    if (i < 0) i = std::max<int64_t>(0, i + n);
    return i;
  };
  const int64_t start = index(b, 0), end = std::min(index(e, n), n);
  Window w;
  w.start = start;
  w.past_end = start > n || start > end;  // nothing matches there, not even an empty needle
  if (start < end) w.text = utf8_encode(std::vector<char32_t>(cps.begin() + start, cps.begin() + end));
  return w;
}

bool all_chars(const std::string& s, bool (*pred)(char32_t)) {
  if (s.empty()) return false;
  size_t i = 0;
  while (i < s.size())
    if (!pred(utf8_next(s, i))) return false;
  return true;
}

// str.startswith / endswith with a prefix or a list (tuple) of prefixes.
bool affix_match(const std::string& s, const Value& affix, bool start, const char* fn) {
  auto one = [&](const Value& v) {
    if (!v.is_string()) fail(ErrorKind::type, std::string(fn) + " first arg must be str or a tuple of str, not " + v.type_name());
    const std::string& a = v.as_string();
    if (a.size() > s.size()) return false;
    return start ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0;
  };
  if (affix.is_list()) {
    for (const Value& v : affix.list_obj().items)
      if (one(v)) return true;
    return false;
  }
  return one(affix);
}

// str.format with {} / {0} / {name} fields, !r / !s conversions, format specs (format_spec.h) and
// {{ }} escapes; no nested fields or field indexing ({x[0]}, {x.attr}). A field may name one
// argument many times ('{0}{0}{0}...'), so the result is held to `max_size` as it grows.
std::string py_format(const std::string& f, const CallArgs& a, size_t max_size) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    const char c = f[i];
    if (c == '{' && i + 1 < f.size() && f[i + 1] == '{') {
      out += '{';
      ++i;
    } else if (c == '}' && i + 1 < f.size() && f[i + 1] == '}') {
      out += '}';
      ++i;
    } else if (c == '{') {
      const size_t close = f.find('}', i);
      if (close == std::string::npos) fail(ErrorKind::type, "Single '{' encountered in format string");
      std::string field = f.substr(i + 1, close - i - 1);
      std::string spec;
      const size_t colon = field.find(':');
      if (colon != std::string::npos) {
        spec = field.substr(colon + 1);
        field.resize(colon);
      }
      char conversion = 0;  // !r / !s
      if (field.size() >= 2 && field[field.size() - 2] == '!') {
        conversion = field.back();
        if (conversion != 'r' && conversion != 's' && conversion != 'a')
          fail(ErrorKind::type, std::string("Unknown conversion specifier ") + conversion);
        field.resize(field.size() - 2);
      }
      const Value* v = nullptr;
      if (field.empty()) {
        if (auto_index < a.args.size()) v = &a.args[auto_index++];
      } else if (std::all_of(field.begin(), field.end(), ::isdigit)) {
        const size_t idx = std::stoul(field);
        if (idx < a.args.size()) v = &a.args[idx];
      } else {
        for (const auto& [k, val] : a.kwargs)
          if (k == field) v = &val;
      }
      if (!v) fail(ErrorKind::type, "format(): no argument for field '{" + field + "}'");
      const Value converted = conversion == 'r' || conversion == 'a' ? Value(v->repr(max_size))
                              : conversion == 's'                    ? Value(v->str(max_size))
                                                                     : *v;
      const std::string text = format_with_spec(converted, spec, max_size);
      check_size(out.size() + text.size(), max_size);
      out += text;
      i = close;
    } else {
      out += c;
    }
  }
  return out;
}

// `max_size`: the renderer's output size limit (get_attribute).
Value string_method(const std::string& s, const std::string& name, size_t max_size) {
  using Fn = std::function<Value(CallArgs&)>;
  Fn fn;
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const bool left = name != "rstrip", right = name != "lstrip";
    fn = [s, left, right, name](CallArgs& a) { return Value(py_strip(s, optional_string(a, 0, "chars", name.c_str()), left, right)); };
  } else if (name == "split" || name == "rsplit") {
    const bool right = name == "rsplit";
    fn = [s, right](CallArgs& a) {
      return string_list(py_split(s, optional_string(a, 0, "sep", "split"), int_arg(a, 1, "maxsplit", -1, "split"), right));
    };
  } else if (name == "splitlines") {
    fn = [s](CallArgs& a) { return string_list(py_splitlines(s, arg_or(a, 0, "keepends", Value(false)).truthy())); };
  } else if (name == "startswith" || name == "endswith") {
    const bool start = name == "startswith";
    fn = [s, start, name](CallArgs& a) {
      const Value* affix = find_arg(a, 0, "prefix");
      if (!affix) fail(ErrorKind::type, name + "() takes at least 1 argument (0 given)");
      const Window w = window_of(s, a, 1);
      return Value(!w.past_end && affix_match(w.text, *affix, start, name.c_str()));
    };
  } else if (name == "replace") {
    fn = [s, max_size](CallArgs& a) {
      return Value(py_replace(s, string_arg(a, 0, "old", "replace"), string_arg(a, 1, "new", "replace"),
                              int_arg(a, 2, "count", -1, "replace"), max_size));
    };
  } else if (name == "upper") {
    fn = [s](CallArgs&) { return Value(upper(s)); };
  } else if (name == "lower") {
    fn = [s](CallArgs&) { return Value(lower(s)); };
  } else if (name == "swapcase") {
    fn = [s](CallArgs&) {
      std::string out;
      size_t i = 0;
      while (i < s.size()) {
        const char32_t cp = utf8_next(s, i);
        utf8_append(out, to_upper(cp) != cp ? to_upper(cp) : to_lower(cp));
      }
      return Value(out);
    };
  } else if (name == "title") {
    fn = [s](CallArgs&) { return Value(py_title(s)); };
  } else if (name == "capitalize") {
    fn = [s](CallArgs&) { return Value(py_capitalize(s)); };
  } else if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    const bool right = name[0] == 'r';
    const bool raise = name.find("index") != std::string::npos;
    fn = [s, right, raise](CallArgs& a) {
      const Window w = window_of(s, a, 1);
      const int64_t p = w.past_end ? -1 : py_find(w.text, string_arg(a, 0, "sub", "find"), right);
      if (p < 0 && raise) fail(ErrorKind::type, "substring not found");
      return Value(p < 0 ? p : p + w.start);
    };
  } else if (name == "count") {
    fn = [s](CallArgs& a) {
      const Window w = window_of(s, a, 1);
      return Value(w.past_end ? int64_t(0) : py_count(w.text, string_arg(a, 0, "sub", "count")));
    };
  } else if (name == "join") {
    fn = [s, max_size](CallArgs& a) {
      const Value* it = find_arg(a, 0, "iterable");
      if (!it) fail(ErrorKind::type, "join() takes exactly one argument (0 given)");
      std::string out;
      bool first = true;
      for (const Value& v : it->is_list() ? it->list_obj().items : std::vector<Value>{}) {
        if (!v.is_string()) fail(ErrorKind::type, std::string("sequence item: expected str instance, ") + v.type_name() + " found");
        // The separator repeats once per item: a long one over a long list multiplies the two.
        check_size(out.size() + (first ? 0 : s.size()) + v.as_string().size(), max_size);
        if (!first) out += s;
        out += v.as_string();
        first = false;
      }
      return Value(out);
    };
  } else if (name == "format") {
    fn = [s, max_size](CallArgs& a) { return Value(py_format(s, a, max_size)); };
  } else if (name == "isdigit" || name == "isnumeric" || name == "isdecimal") {
    fn = [s](CallArgs&) { return Value(all_chars(s, is_digit)); };
  } else if (name == "isalpha") {
    fn = [s](CallArgs&) { return Value(all_chars(s, is_alpha)); };
  } else if (name == "isalnum") {
    fn = [s](CallArgs&) { return Value(all_chars(s, [](char32_t c) { return is_alpha(c) || is_digit(c); })); };
  } else if (name == "isspace") {
    fn = [s](CallArgs&) { return Value(all_chars(s, is_space)); };
  } else if (name == "islower" || name == "isupper") {
    const bool want_lower = name == "islower";
    fn = [s, want_lower](CallArgs&) {
      bool any_cased = false;
      size_t i = 0;
      while (i < s.size()) {
        const char32_t cp = utf8_next(s, i);
        if (to_upper(cp) == cp && to_lower(cp) == cp) continue;
        any_cased = true;
        if (want_lower ? to_lower(cp) != cp : to_upper(cp) != cp) return Value(false);
      }
      return Value(any_cased);
    };
  } else if (name == "center" || name == "ljust" || name == "rjust") {
    const bool left = name != "ljust", right = name != "rjust";
    fn = [s, left, right, max_size](CallArgs& a) {
      const std::string fill = optional_string(a, 1, "fillchar", "center").value_or(" ");
      if (utf8_length(fill) != 1) fail(ErrorKind::type, "The fill character must be exactly one character long");
      return Value(py_center(s, int_arg(a, 0, "width", 0, "center"), left, right, fill, max_size));
    };
  } else if (name == "zfill") {
    fn = [s, max_size](CallArgs& a) {
      const int64_t width = int_arg(a, 0, "width", 0, "zfill");
      const int64_t len = static_cast<int64_t>(utf8_length(s));
      if (width <= len) return Value(s);
      check_repeat_size(s.size(), 1, width - len, max_size);  // the width is the template's: bound it before allocating
      const size_t sign = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
      return Value(s.substr(0, sign) + std::string(width - len, '0') + s.substr(sign));
    };
  } else {
    return Value::undefined("'str object' has no attribute '" + name + "'");
  }
  return Value::function("str." + name, std::move(fn));
}

Value unsafe_method(const char* type, const std::string& name) {
  const std::string message = "access to attribute '" + name + "' of '" + type + "' object is unsafe.";
  return Value::function(std::string(type) + "." + name, [message](CallArgs&) -> Value { fail(ErrorKind::type, message); });
}

Value dict_method(const Value& d, const std::string& name) {
  if (name == "items")
    return Value::function("dict.items", [d](CallArgs&) {
      std::vector<Value> items;
      for (const auto& [k, v] : d.dict_obj().items) items.push_back(Value::tuple({dict_key_value(k), v}));
      return Value::list(std::move(items));
    });
  if (name == "keys")
    return Value::function("dict.keys", [d](CallArgs&) {
      std::vector<Value> keys;
      for (const auto& [k, _] : d.dict_obj().items) keys.push_back(dict_key_value(k));
      return Value::list(std::move(keys));
    });
  if (name == "values")
    return Value::function("dict.values", [d](CallArgs&) {
      std::vector<Value> values;
      for (const auto& [_, v] : d.dict_obj().items) values.push_back(v);
      return Value::list(std::move(values));
    });
  if (name == "get")
    return Value::function("dict.get", [d](CallArgs& a) {
      const Value* key = find_arg(a, 0, "key");
      if (!key) fail(ErrorKind::type, "get expected at least 1 argument, got 0");
      const Value* v = dict_key_hashable(*key) ? d.dict_obj().find(dict_key(*key)) : nullptr;
      return v ? *v : arg_or(a, 1, "default", Value::none());
    });
  if (name == "copy")
    return Value::function("dict.copy", [d](CallArgs&) {
      auto copy = std::make_shared<DictObj>();
      copy->items = d.dict_obj().items;
      return Value(copy);
    });
  if (name == "pop" || name == "popitem" || name == "update" || name == "clear" || name == "setdefault")
    return unsafe_method("dict", name);
  return Value();
}

// `max_size`: the output size limit, for the text of a needle index() does not find.
Value list_method(const Value& l, const std::string& name, size_t max_size) {
  if (name == "index")
    return Value::function("list.index", [l, max_size](CallArgs& a) {
      const Value needle = arg_or(a, 0, "value", Value());
      const auto& items = l.list_obj().items;
      for (size_t i = 0; i < items.size(); ++i)
        if (values_equal(items[i], needle)) return Value(static_cast<int64_t>(i));
      fail(ErrorKind::type, needle.repr(max_size) + " is not in list");
    });
  if (name == "count")
    return Value::function("list.count", [l](CallArgs& a) {
      const Value needle = arg_or(a, 0, "value", Value());
      int64_t n = 0;
      for (const Value& v : l.list_obj().items) n += values_equal(v, needle);
      return Value(n);
    });
  if (name == "append" || name == "extend" || name == "insert" || name == "pop" || name == "remove" ||
      name == "reverse" || name == "sort" || name == "clear")
    return unsafe_method("list", name);
  return Value();
}

int64_t normalize_index(int64_t i, int64_t n) { return i < 0 ? i + n : i; }

}  // namespace

namespace {
// "'dict object'": the quoted type in jinja2's undefined hints.
std::string quoted_type(const Value& obj) {
  std::string q = "'";
  q += object_type_repr(obj);
  q += '\'';
  return q;
}
}  // namespace

std::string object_type_repr(const Value& obj) {
  if (obj.is_none()) return "None";
  return std::string(obj.type_name()) + " object";
}

Value get_attribute(const Value& obj, const std::string& name, size_t max_size) {
  auto missing = [&] { return Value::undefined(quoted_type(obj) + " has no attribute '" + name + "'"); };
  if (!name.empty() && name[0] == '_') return missing();  // the sandbox hides private attributes
  switch (obj.kind()) {
    case Kind::string: return string_method(obj.as_string(), name, max_size);
    case Kind::dict: {
      if (obj.dict_obj().flavor == DictFlavor::dict) {
        Value m = dict_method(obj, name);
        if (!m.is_undefined()) return m;
      }
      const Value* v = obj.dict_obj().find(name);
      return v ? *v : missing();
    }
    case Kind::list: {
      const auto& fields = obj.list_obj().fields;
      for (size_t i = 0; i < fields.size() && i < obj.list_obj().items.size(); ++i)
        if (fields[i] == name) return obj.list_obj().items[i];
      Value m = list_method(obj, name, max_size);
      return m.is_undefined() ? missing() : m;
    }
    default: return missing();
  }
}

Value get_item(const Value& obj, const Value& key, size_t max_size) {
  if (obj.is_dict()) {
    if (key.is_string()) {
      if (const Value* v = obj.dict_obj().find(key.as_string())) return *v;
      return get_attribute(obj, key.as_string(), max_size);
    }
    if (dict_key_hashable(key))
      if (const Value* v = obj.dict_obj().find(dict_key(key))) return *v;
    return Value::undefined(quoted_type(obj) + " has no element " + key.repr(max_size));
  }
  if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    if (obj.is_list()) {
      const auto& items = obj.list_obj().items;
      const int64_t i = normalize_index(key.as_int(), static_cast<int64_t>(items.size()));
      if (i >= 0 && i < static_cast<int64_t>(items.size())) return items[i];
    } else {
      const std::vector<char32_t> cps = utf8_decode(obj.as_string());
      const int64_t i = normalize_index(key.as_int(), static_cast<int64_t>(cps.size()));
      if (i >= 0 && i < static_cast<int64_t>(cps.size())) {
        std::string out;
        utf8_append(out, cps[i]);
        return Value(out);
      }
    }
    return Value::undefined(quoted_type(obj) + " has no element " + key.repr(max_size));
  }
  if (key.is_string()) return get_attribute(obj, key.as_string(), max_size);
  return Value::undefined(quoted_type(obj) + " has no element " + key.repr(max_size));
}

Value slice_value(const Value& obj, const Value& start_v, const Value& stop_v, const Value& step_v) {
  auto as_opt = [](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.is_none() || v.is_undefined()) return std::nullopt;
    if (!v.is_int() && !v.is_bool())
      fail(ErrorKind::type, std::string("slice ") + what + " must be an integer or None, not " + v.type_name());
    return v.as_int();
  };
  const std::optional<int64_t> start = as_opt(start_v, "start"), stop = as_opt(stop_v, "stop");
  const int64_t step = as_opt(step_v, "step").value_or(1);
  if (step == 0) fail(ErrorKind::type, "slice step cannot be zero");
  int64_t n;
  std::vector<char32_t> cps;
  if (obj.is_list()) n = static_cast<int64_t>(obj.list_obj().items.size());
  else if (obj.is_string()) {
    cps = utf8_decode(obj.as_string());
    n = static_cast<int64_t>(cps.size());
  } else {
    fail(ErrorKind::type, std::string("'") + obj.type_name() + "' object is not subscriptable");
  }
  // Python's slice.indices: clamp into range, with defaults by the step's sign.
  auto clamp = [&](std::optional<int64_t> v, int64_t def) {
    if (!v) return def;
    int64_t i = *v < 0 ? *v + n : *v;
    if (step > 0) return std::clamp<int64_t>(i, 0, n);
    return std::clamp<int64_t>(i, -1, n - 1);
  };
  const int64_t b = clamp(start, step > 0 ? 0 : n - 1);
  const int64_t e = clamp(stop, step > 0 ? n : -1);
  std::vector<int64_t> picks;
  for (int64_t i = b; step > 0 ? i < e : i > e; i += step) picks.push_back(i);
  if (obj.is_list()) {
    std::vector<Value> out;
    out.reserve(picks.size());
    for (int64_t i : picks) out.push_back(obj.list_obj().items[i]);
    return Value::list(std::move(out));
  }
  std::string out;
  for (int64_t i : picks) utf8_append(out, cps[i]);
  return Value(out);
}

}  // namespace seam::jinja
