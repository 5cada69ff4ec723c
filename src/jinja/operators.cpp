#include "jinja/operators.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdio>

#include "jinja/error.h"
#include "jinja/string_methods.h"
#include "jinja/unicode.h"

namespace seam::jinja {

namespace {

bool is_numeric(const Value& v) { return v.is_int() || v.is_bool() || v.is_float(); }

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
  fail(ErrorKind::type, std::string("unsupported operand type(s) for ") + op + ": '" + a.type_name() + "' and '" +
                            b.type_name() + "'");
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// A printf width or precision as written (digits from `j`); past what int64 holds it saturates,
// for the size checks to refuse.
int64_t read_count(const std::string& f, size_t& j) {
  int64_t n = 0;
  while (j < f.size() && std::isdigit(static_cast<unsigned char>(f[j]))) {
    const int d = f[j++] - '0';
    n = n > (INT64_MAX - d) / 10 ? INT64_MAX : n * 10 + d;
  }
  return n;
}

// snprintf of one number appended to `out`, sized first: the text is checked against the size
// limit before it is allocated (no fixed buffer, which would cut a wide field short).
template <class T>
void append_printf(std::string& out, const std::string& format, T x, size_t max_size) {
  const int n = std::snprintf(nullptr, 0, format.c_str(), x);
  if (n < 0) fail(ErrorKind::type, "cannot format " + format);
  check_size(out.size() + size_t(n), max_size);
  const size_t at = out.size();
  out.resize(at + size_t(n) + 1);
  std::snprintf(out.data() + at, size_t(n) + 1, format.c_str(), x);
  out.resize(at + size_t(n));
}

// printf-style formatting: %[(key)][flags][width][.precision] with s r d i f e g x o and %%;
// one value, a tuple of values, or a dict whose items %(key)s names (Python's rules: a dict is
// also the one value of a plain %s, a keyed field after the plain one has used it, but a plain
// field after a keyed one has nothing left, and a dict's unused items are no error). Width and
// precision drive the size of a field whatever the value, so they are held to the output size
// limit before anything is formatted: '%1000000000000d' % 1 fails rather than asking for a
// terabyte. %s and %r count code points, as Python does.
std::string printf_format(const std::string& f, const Value& b, size_t max_size) {
  std::vector<Value> args = b.is_list() && b.list_obj().is_tuple ? b.list_obj().items : std::vector<Value>{b};
  const bool mapping = b.is_dict();
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%' || i + 1 >= f.size()) {
      out += f[i];
      continue;
    }
    size_t j = i + 1;
    const Value* keyed = nullptr;  // the dict's item a %(key) field names
    if (f[j] == '(') {
      // The key runs to the matching parenthesis (Python counts nested ones: '%(a(b))s' is key 'a(b)').
      int depth = 1;
      const size_t start = ++j;
      while (j < f.size() && depth > 0) {
        if (f[j] == '(') ++depth;
        if (f[j] == ')') --depth;
        ++j;
      }
      if (depth > 0) fail(ErrorKind::type, "incomplete format key");
      if (!mapping) fail(ErrorKind::type, "format requires a mapping");
      const std::string key = f.substr(start, j - 1 - start);
      keyed = b.dict_obj().find(dict_key(Value(key)));
      if (!keyed) fail(ErrorKind::type, "KeyError: " + Value(key).repr(max_size));
      next = args.size();  // Python: no positional argument is left once a key is used
    }
    const size_t flags_start = j;
    while (j < f.size() && std::string("-+ 0#").find(f[j]) != std::string::npos) ++j;
    const std::string flags = f.substr(flags_start, j - flags_start);
    const int64_t width = j < f.size() && std::isdigit(static_cast<unsigned char>(f[j])) ? read_count(f, j) : -1;
    int64_t precision = -1;
    if (j < f.size() && f[j] == '.') precision = read_count(f, ++j);
    if (j >= f.size()) fail(ErrorKind::type, "incomplete format");
    const char spec = f[j];
    i = j;
    if (spec == '%') {
      out += '%';
      continue;
    }
    if (!keyed && next >= args.size()) fail(ErrorKind::type, "not enough arguments for format string");
    const Value& v = keyed ? *keyed : args[next++];
    // A field is at least `width` code points, so at least `width` bytes.
    if (width > 0) check_size(size_t(width), max_size);
    if (spec == 's' || spec == 'r') {
      std::string text = spec == 's' ? v.str(max_size) : v.repr(max_size);
      if (precision >= 0 && int64_t(utf8_length(text)) > precision) {
        std::vector<char32_t> cps = utf8_decode(text);
        cps.resize(size_t(precision));
        text = utf8_encode(cps);
      }
      const int64_t pad = std::max<int64_t>(0, width - int64_t(utf8_length(text)));
      check_size(out.size() + text.size() + size_t(pad), max_size);
      if (flags.find('-') == std::string::npos) out.append(size_t(pad), ' ');
      out += text;
      if (flags.find('-') != std::string::npos) out.append(size_t(pad), ' ');
      continue;
    }
    const bool integral = spec == 'd' || spec == 'i' || spec == 'x' || spec == 'o' || spec == 'X';
    const bool real = spec == 'f' || spec == 'F' || spec == 'e' || spec == 'E' || spec == 'g' || spec == 'G';
    if (!integral && !real) fail(ErrorKind::type, std::string("unsupported format character '") + spec + "'");
    // A number's precision is a count of digits printf produces (and, for %g, works through).
    if (precision > 0) check_size(size_t(precision), max_size);
    if (width > INT_MAX) fail(ErrorKind::type, "width too big");
    if (precision > INT_MAX) fail(ErrorKind::type, "precision too big");
    std::string c_format = "%" + flags;
    if (width >= 0) c_format += std::to_string(width);
    if (precision >= 0) c_format += '.' + std::to_string(precision);
    if (integral) {
      if (!v.is_number())
        fail(ErrorKind::type, std::string("%") + spec + " format: a real number is required, not " + v.type_name());
      const long long n = v.is_float() ? static_cast<long long>(v.as_double()) : static_cast<long long>(v.as_int());
      append_printf(out, c_format + "ll" + (spec == 'i' ? 'd' : spec), n, max_size);
    } else {
      if (!v.is_number()) fail(ErrorKind::type, std::string("must be real number, not ") + v.type_name());
      append_printf(out, c_format + spec, v.as_double(), max_size);
    }
  }
  if (!mapping && next < args.size()) fail(ErrorKind::type, "not all arguments converted during string formatting");
  return out;
}

// list * n: held to the limit in the bytes its copies take (copy_bytes), as str * n is in its
// text, so [0] * 10**8 fails though its items are few bytes of template. An empty list repeats to
// an empty list without counting to n ([] * 10**18 must not loop 10**18 times).
Value repeat_list(const ListObj& seq, int64_t n, size_t max_size) {
  check_repeat_size(0, copy_bytes(seq.items), n, max_size);
  std::vector<Value> items;
  if (!seq.items.empty()) {
    items.reserve(seq.items.size() * size_t(n));
    for (int64_t i = 0; i < n; ++i) items.insert(items.end(), seq.items.begin(), seq.items.end());
  }
  return seq.is_tuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
}

}  // namespace

void require_defined(const Value& v) {
  if (v.is_undefined()) fail(ErrorKind::undefined, v.undefined_hint().empty() ? "value is undefined" : v.undefined_hint());
}

bool values_equal(const Value& a, const Value& b) {
  if (is_numeric(a) && is_numeric(b)) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::undefined:
    case Kind::none: return true;
    case Kind::string: return a.as_string() == b.as_string();
    case Kind::list: {
      const auto& x = a.list_obj().items;
      const auto& y = b.list_obj().items;
      if (x.size() != y.size() || a.list_obj().is_tuple != b.list_obj().is_tuple) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!values_equal(x[i], y[i])) return false;
      return true;
    }
    case Kind::dict: {
      if (a.dict_ptr() == b.dict_ptr()) return true;
      if (a.dict_obj().flavor != DictFlavor::dict || b.dict_obj().flavor != DictFlavor::dict) return false;
      const auto& x = a.dict_obj().items;
      if (x.size() != b.dict_obj().items.size()) return false;
      for (const auto& [k, v] : x) {
        const Value* other = b.dict_obj().find(k);
        if (!other || !values_equal(v, *other)) return false;
      }
      return true;
    }
    case Kind::function: return &a.function_obj() == &b.function_obj();
    default: return false;
  }
}

int value_compare(const Value& a, const Value& b, bool case_sensitive) {
  if (is_numeric(a) && is_numeric(b)) {
    if (a.is_float() || b.is_float()) {
      const double x = a.as_double(), y = b.as_double();
      return x < y ? -1 : x > y ? 1 : 0;
    }
    return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int() ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    if (case_sensitive) return a.as_string().compare(b.as_string()) < 0 ? -1 : a.as_string() == b.as_string() ? 0 : 1;
    std::string x = a.as_string(), y = b.as_string();
    for (char& c : x) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (char& c : y) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return x < y ? -1 : x == y ? 0 : 1;
  }
  if (a.is_list() && b.is_list()) {
    const auto& x = a.list_obj().items;
    const auto& y = b.list_obj().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (values_equal(x[i], y[i])) continue;
      return value_compare(x[i], y[i], case_sensitive);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  require_defined(a);
  require_defined(b);
  fail(ErrorKind::type, std::string("'<' not supported between instances of '") + a.type_name() + "' and '" +
                            b.type_name() + "'");
}

bool value_less(const Value& a, const Value& b) { return value_compare(a, b) < 0; }

Value negate(const Value& v) {
  require_defined(v);
  if (v.is_float()) return Value(-v.as_double());
  if (v.is_int() || v.is_bool()) return Value(-v.as_int());
  fail(ErrorKind::type, std::string("bad operand type for unary -: '") + v.type_name() + "'");
}

Value binary_op(const std::string& op, const Value& a, const Value& b, size_t max_size) {
  require_defined(a);
  require_defined(b);
  if (is_numeric(a) && is_numeric(b)) {
    const bool fl = a.is_float() || b.is_float();
    const int64_t x = a.as_int(), y = b.as_int();
    const double dx = a.as_double(), dy = b.as_double();
    if (op == "+") return fl ? Value(dx + dy) : Value(x + y);
    if (op == "-") return fl ? Value(dx - dy) : Value(x - y);
    if (op == "*") return fl ? Value(dx * dy) : Value(x * y);
    if (op == "/") {
      if (dy == 0) fail(ErrorKind::type, fl ? "float division by zero" : "division by zero");
      return Value(dx / dy);
    }
    if (op == "//") {
      if (dy == 0) fail(ErrorKind::type, "integer division or modulo by zero");
      return fl ? Value(std::floor(dx / dy)) : Value(floor_div(x, y));
    }
    if (op == "%") {
      if (dy == 0) fail(ErrorKind::type, "integer division or modulo by zero");
      if (fl) {
        double r = std::fmod(dx, dy);
        if (r != 0 && ((r < 0) != (dy < 0))) r += dy;
        return Value(r);
      }
      return Value(x - floor_div(x, y) * y);
    }
    if (op == "**") {
      if (!fl && y >= 0) {
        int64_t r = 1;
        for (int64_t i = 0; i < y && i < 64; ++i) r *= x;
        return Value(r);
      }
      return Value(std::pow(dx, dy));
    }
  }
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      check_size(a.as_string().size() + b.as_string().size(), max_size);
      return Value(a.as_string() + b.as_string());
    }
    if (a.is_list() && b.is_list()) {
      check_size(copy_bytes(a.list_obj().items) + copy_bytes(b.list_obj().items), max_size);
      if (a.list_obj().is_tuple != b.list_obj().is_tuple)
        fail(ErrorKind::type, std::string("can only concatenate ") + (a.list_obj().is_tuple ? "tuple" : "list") +
                                  " (not \"" + (b.list_obj().is_tuple ? "tuple" : "list") + "\") to " +
                                  (a.list_obj().is_tuple ? "tuple" : "list"));
      std::vector<Value> items = a.list_obj().items;
      items.insert(items.end(), b.list_obj().items.begin(), b.list_obj().items.end());
      return a.list_obj().is_tuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
    }
    if (a.is_string()) fail(ErrorKind::type, std::string("can only concatenate str (not \"") + b.type_name() + "\") to str");
    if (a.is_list()) fail(ErrorKind::type, std::string("can only concatenate list (not \"") + b.type_name() + "\") to list");
    unsupported("+", a, b);
  }
  if (op == "*") {
    const Value* seq = a.is_string() || a.is_list() ? &a : b.is_string() || b.is_list() ? &b : nullptr;
    const Value* count = seq == &a ? &b : &a;
    if (seq && (count->is_int() || count->is_bool())) {
      const int64_t n = std::max<int64_t>(0, count->as_int());
      if (seq->is_string()) {
        check_repeat_size(0, seq->as_string().size(), n, max_size);
        return Value(py_repeat(seq->as_string(), n));
      }
      return repeat_list(seq->list_obj(), n, max_size);
    }
    if (seq) fail(ErrorKind::type, std::string("can't multiply sequence by non-int of type '") + count->type_name() + "'");
  }
  if (op == "%" && a.is_string()) return Value(printf_format(a.as_string(), b, max_size));
  unsupported(op, a, b);
}

bool contains(const Value& haystack, const Value& needle) {
  if (haystack.is_undefined()) return false;  // jinja2's Undefined iterates as empty
  if (haystack.is_string()) {
    if (!needle.is_string())
      fail(ErrorKind::type, std::string("'in <string>' requires string as left operand, not ") + needle.type_name());
    return haystack.as_string().find(needle.as_string()) != std::string::npos;
  }
  if (haystack.is_list()) {
    for (const Value& v : haystack.list_obj().items)
      if (values_equal(v, needle)) return true;
    return false;
  }
  if (haystack.is_dict()) {
    if (needle.is_undefined()) return false;  // jinja2's Undefined hashes (by identity): never a key
    return haystack.dict_obj().find(dict_key(needle)) != nullptr;  // a list or dict: unhashable, a TypeError
  }
  fail(ErrorKind::type, std::string("argument of type '") + haystack.type_name() + "' is not iterable");
}

}  // namespace seam::jinja
