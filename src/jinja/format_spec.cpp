#include "jinja/format_spec.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstdio>

#include "jinja/error.h"
#include "jinja/string_methods.h"
#include "jinja/unicode.h"

namespace seam::jinja {

namespace {

struct Spec {
  std::string fill;  // empty: none written (the 0 flag's '0', else a space)
  char align = 0;  // < > = ^, or 0: the type's default
  char sign = '-';
  bool alt = false, zero = false;
  int64_t width = -1, precision = -1;
  char grouping = 0;  // ',' or '_'
  char type = 0;
};

Spec parse(const std::string& s) {
  Spec p;
  size_t i = 0;
  auto is_align = [](char c) { return c == '<' || c == '>' || c == '=' || c == '^'; };
  // A fill character (any code point) then an align, or an align alone.
  size_t after_fill = 0;
  if (!s.empty()) {
    size_t j = 0;
    utf8_next(s, j);
    after_fill = j;
  }
  if (after_fill < s.size() && is_align(s[after_fill])) {
    p.fill = s.substr(0, after_fill);
    p.align = s[after_fill];
    i = after_fill + 1;
  } else if (!s.empty() && is_align(s[0])) {
    p.align = s[0];
    i = 1;
  }
  if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) p.sign = s[i++];
  if (i < s.size() && s[i] == '#') p.alt = true, ++i;
  if (i < s.size() && s[i] == '0') p.zero = true, ++i;
  // A width or precision as written (-1: none); past what int64 holds it saturates. Their bounds
  // are the output size limit's, checked where they drive a size (format_with_spec, format_real).
  auto digits = [&]() {
    int64_t n = -1;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      const int d = s[i++] - '0';
      n = n < 0 ? d : n > (INT64_MAX - d) / 10 ? INT64_MAX : n * 10 + d;
    }
    return n;
  };
  p.width = digits();
  if (i < s.size() && (s[i] == ',' || s[i] == '_')) p.grouping = s[i++];
  if (i < s.size() && s[i] == '.') {
    ++i;
    p.precision = digits();
    if (p.precision < 0) fail(ErrorKind::type, "Format specifier missing precision");
  }
  if (i < s.size()) p.type = s[i++];
  if (i != s.size()) fail(ErrorKind::type, "Invalid format specifier '" + s + "'");
  return p;
}

// snprintf of one double into a string of whatever length it takes (precision may be large), held
// to `max_size` before it is allocated.
std::string printf_text(const std::string& format, double x, size_t max_size) {
  const int n = std::snprintf(nullptr, 0, format.c_str(), x);
  check_size(size_t(std::max(n, 0)), max_size);
  std::string out(size_t(std::max(n, 0)) + 1, '\0');
  std::snprintf(out.data(), out.size(), format.c_str(), x);
  out.resize(size_t(std::max(n, 0)));
  return out;
}

// Separators every 3 digits of the integer part of `digits` (digits, optionally a fraction).
std::string group(const std::string& digits, char sep, size_t every = 3) {
  size_t end = digits.find_first_not_of(every == 4 ? "0123456789abcdefABCDEF" : "0123456789");
  if (end == std::string::npos) end = digits.size();
  std::string out;
  for (size_t k = 0; k < end; ++k) {
    if (k > 0 && (end - k) % every == 0) out += sep;
    out += digits[k];
  }
  return out + digits.substr(end);
}

// `numeric`: the 0 flag pads numbers after their sign ('='), strings on the right ('<'), as Python.
// The padded size is checked against `max_size` (the output size limit) before it is built: the
// width counts code points and a fill may take 4 bytes each.
std::string pad(const std::string& sign, const std::string& body, const Spec& p, char default_align, size_t max_size,
                bool numeric = true) {
  const char align = p.align ? p.align : (p.zero ? (numeric ? '=' : '<') : default_align);
  const std::string fill = !p.fill.empty() ? p.fill : (p.zero ? "0" : " ");
  const int64_t len = int64_t(utf8_length(sign) + utf8_length(body));
  if (p.width <= len) return sign + body;
  const int64_t n = p.width - len;
  check_repeat_size(sign.size() + body.size(), fill.size(), n, max_size);
  auto fills = [&](int64_t k) { return py_repeat(fill, k); };
  switch (align) {
    case '<': return sign + body + fills(n);
    case '^': return fills(n / 2) + sign + body + fills(n - n / 2);
    case '=': return sign + fills(n) + body;
    default: return fills(n) + sign + body;
  }
}

// Zero padding with grouping: Python pads the digits with zeros and groups the padding too
// ('{:010,}'.format(1) is 00,000,001): leading zeros are added to the ungrouped digits until the
// grouped text fills the width.
bool zero_pads(const Spec& p) {
  const char align = p.align ? p.align : (p.zero ? '=' : '>');
  return align == '=' && (p.fill == "0" || (p.fill.empty() && p.zero));
}
// The number of leading zeros is found directly (grouped, d digits take d + (d - 1) / every
// characters), not by regrouping once per zero: that is quadratic in a width the template chooses.
std::string grouped_to_width(std::string digits, const std::string& sign, const Spec& p, size_t every) {
  std::string body = group(digits, p.grouping, every);
  if (!zero_pads(p) || int64_t(sign.size() + body.size()) >= p.width) return body;
  size_t int_len = digits.find_first_not_of(every == 4 ? "0123456789abcdefABCDEF" : "0123456789");
  if (int_len == std::string::npos) int_len = digits.size();
  const int64_t target = p.width - int64_t(sign.size() + digits.size() - int_len);  // for the grouped integer part
  auto grouped_length = [&](int64_t d) { return d + (d - 1) / int64_t(every); };
  int64_t lo = int64_t(int_len), hi = std::max(lo, target);  // grouped_length(target) >= target
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (grouped_length(mid) >= target) hi = mid;
    else lo = mid + 1;
  }
  digits.insert(0, size_t(lo) - int_len, '0');
  return group(digits, p.grouping, every);
}

std::string sign_of(bool negative, char sign) {
  if (negative) return "-";
  return sign == '+' ? "+" : sign == ' ' ? " " : "";
}

std::string format_int(int64_t v, const Spec& p, size_t max_size) {
  const bool neg = v < 0;
  const uint64_t mag = neg ? uint64_t(0) - uint64_t(v) : uint64_t(v);
  std::string body, prefix;
  char buf[80];
  switch (p.type) {
    case 0: case 'd': case 'n': std::snprintf(buf, sizeof buf, "%llu", (unsigned long long)mag); body = buf; break;
    case 'x': std::snprintf(buf, sizeof buf, "%llx", (unsigned long long)mag); body = buf; prefix = "0x"; break;
    case 'X': std::snprintf(buf, sizeof buf, "%llX", (unsigned long long)mag); body = buf; prefix = "0X"; break;
    case 'o': std::snprintf(buf, sizeof buf, "%llo", (unsigned long long)mag); body = buf; prefix = "0o"; break;
    case 'b': {
      uint64_t m = mag;
      do body.insert(body.begin(), char('0' + (m & 1))); while (m >>= 1);
      prefix = "0b";
      break;
    }
    case 'c': {
      if (v < 0 || v > 0x10FFFF) fail(ErrorKind::type, "%c arg not in range(0x110000)");
      std::string c;
      utf8_append(c, char32_t(v));
      return pad("", c, p, '<', max_size);
    }
    default: fail(ErrorKind::type, std::string("Unknown format code '") + p.type + "' for object of type 'int'");
  }
  const std::string head = sign_of(neg, p.sign) + (p.alt ? prefix : "");
  if (p.grouping) body = grouped_to_width(body, head, p, p.type == 0 || p.type == 'd' || p.type == 'n' ? 3 : 4);
  return pad(head, body, p, '>', max_size);
}

std::string format_real(double v, const Spec& p, size_t max_size) {
  char type = p.type;
  // printf produces (and for 'g' works through) `precision` digits: bound them before it runs.
  if (p.precision > 0) check_size(size_t(p.precision), max_size);
  if (p.precision > INT_MAX) fail(ErrorKind::type, "precision too big");
  const bool neg = std::signbit(v) && !std::isnan(v);
  const double mag = std::fabs(v);
  std::string body;
  if (std::isinf(mag) || std::isnan(mag)) {
    body = std::isnan(mag) ? "nan" : "inf";
    if (type == 'F' || type == 'E' || type == 'G') body = std::isnan(mag) ? "NAN" : "INF";
    if (type == '%') body += "%";
  } else if (type == 0 && p.precision < 0) {
    body = Value(mag).str();  // repr
  } else if (type == 0) {
    // No type with a precision: 'g' with Python's threshold for it (scientific from exponent
    // p - 1, not p), trailing zeros dropped, and a fixed-point result keeps one digit past the
    // point ("1.0", not "1"). p = 0 counts as 1.
    const int prec = int(std::max<int64_t>(1, p.precision));
    std::string sci = printf_text("%." + std::to_string(prec - 1) + "e", mag, max_size);
    const int exp = std::atoi(sci.c_str() + sci.find('e') + 1);
    auto strip = [&](std::string t) {
      if (p.alt || t.find('.') == std::string::npos) return t;
      while (t.back() == '0') t.pop_back();
      if (t.back() == '.') t.pop_back();
      return t;
    };
    if (exp < -4 || exp >= prec - 1) {
      const size_t e = sci.find('e');
      body = strip(sci.substr(0, e)) + sci.substr(e);
    } else {
      body = strip(printf_text("%." + std::to_string(prec - 1 - exp) + "f", mag, max_size));
      if (!p.alt && body.find('.') == std::string::npos) body += ".0";
    }
  } else {
    const int prec = int(p.precision < 0 ? 6 : p.precision);
    double x = mag;
    std::string suffix;
    char c = type;
    if (type == '%') x *= 100, c = 'f', suffix = "%";
    if (c == 'n') c = 'g';
    if (c != 'f' && c != 'F' && c != 'e' && c != 'E' && c != 'g' && c != 'G')
      fail(ErrorKind::type, std::string("Unknown format code '") + type + "' for object of type 'float'");
    body = printf_text(std::string("%") + (p.alt ? "#" : "") + "." + std::to_string(prec) + c, x, max_size) + suffix;
  }
  const std::string head = sign_of(neg, p.sign);
  if (p.grouping) body = grouped_to_width(body, head, p, 3);
  return pad(head, body, p, '>', max_size);
}

}  // namespace

std::string format_with_spec(const Value& v, const std::string& spec, size_t max_size) {
  if (spec.empty()) return v.str(max_size);
  const Spec p = parse(spec);
  // The field is at least `width` code points, so at least `width` bytes, whatever the value.
  if (p.width > 0) check_size(size_t(p.width), max_size);
  if (v.is_string()) {
    if (p.type && p.type != 's') fail(ErrorKind::type, std::string("Unknown format code '") + p.type + "' for object of type 'str'");
    if (p.sign != '-' || p.align == '=' || p.grouping || p.alt)
      fail(ErrorKind::type, "Sign, alignment '=', grouping or '#' not allowed in string format specifier");
    std::string s = v.as_string();
    if (p.precision >= 0) {
      std::vector<char32_t> cps = utf8_decode(s);
      if (int64_t(cps.size()) > p.precision) cps.resize(size_t(p.precision));
      s = utf8_encode(cps);
    }
    return pad("", s, p, '<', max_size, /*numeric=*/false);
  }
  if (v.is_int() || v.is_bool()) {
    if (p.type && std::string("eEfFgG%").find(p.type) != std::string::npos)
      return format_real(double(v.as_int()), p, max_size);
    if (p.precision >= 0) fail(ErrorKind::type, "Precision not allowed in integer format specifier");
    return format_int(v.as_int(), p, max_size);
  }
  if (v.is_float()) return format_real(v.as_double(), p, max_size);
  fail(ErrorKind::type, std::string("unsupported format string passed to ") + v.type_name() + ".__format__");
}

}  // namespace seam::jinja
