// An independent JSON Schema validator for the keywords the grammar engine
// supports, written from the specification (not from the engine's code):
// formats are checked by parsing (real month lengths, leap years), patterns
// with PCRE2's search. validate() returns "" when valid, else the first reason.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "grammar_test_util.h"

namespace seam::grammar::test {

using ojson = nlohmann::ordered_json;

inline size_t code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

inline bool all_of(const std::string& s, const char* chars) { return s.find_first_not_of(chars) == std::string::npos; }

inline bool check_date(const std::string& s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  if (!all_of(s.substr(0, 4) + s.substr(5, 2) + s.substr(8, 2), "0123456789")) return false;
  const int y = std::stoi(s.substr(0, 4)), m = std::stoi(s.substr(5, 2)), d = std::stoi(s.substr(8, 2));
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  static const int kDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (m < 1 || m > 12) return false;
  return d >= 1 && d <= kDays[m - 1] + (m == 2 && leap ? 1 : 0);
}

inline bool two_digits(const std::string& s, size_t at, int max) {
  return at + 2 <= s.size() && isdigit(s[at]) && isdigit(s[at + 1]) && std::stoi(s.substr(at, 2)) <= max;
}

inline bool check_time(const std::string& s) {
  if (!(two_digits(s, 0, 23) && s.size() > 8 && s[2] == ':' && two_digits(s, 3, 59) && s[5] == ':' &&
        two_digits(s, 6, 59)))
    return false;
  size_t i = 8;
  if (i < s.size() && s[i] == '.') {
    const size_t start = ++i;
    while (i < s.size() && isdigit(s[i])) ++i;
    if (i == start) return false;
  }
  if (i < s.size() && s[i] == 'Z') return i + 1 == s.size();
  return i + 6 == s.size() && (s[i] == '+' || s[i] == '-') && two_digits(s, i + 1, 23) && s[i + 3] == ':' &&
         two_digits(s, i + 4, 59);
}

inline std::vector<std::string> split(const std::string& s, char c) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == c) out.push_back(s.substr(start, i - start)), start = i + 1;
  return out;
}

inline bool check_ipv4(const std::string& s) {
  const auto parts = split(s, '.');
  if (parts.size() != 4) return false;
  for (const std::string& p : parts)
    if (p.empty() || p.size() > 3 || !all_of(p, "0123456789") || (p.size() > 1 && p[0] == '0') || std::stoi(p) > 255)
      return false;
  return true;
}

// RFC 4291 section 2.2: eight groups of 1-4 hex digits, the last two possibly an IPv4 address,
// one run of groups (at least one) possibly written "::".
inline bool check_ipv6(const std::string& s) {
  const size_t dc = s.find("::");
  if (dc != std::string::npos && s.find("::", dc + 1) != std::string::npos) return false;
  auto groups = [](const std::string& part, bool last, int& n) {
    if (part.empty()) return true;
    const auto gs = split(part, ':');
    for (size_t i = 0; i < gs.size(); ++i) {
      if (last && i + 1 == gs.size() && gs[i].find('.') != std::string::npos) {
        if (!check_ipv4(gs[i])) return false;
        n += 2;
        continue;
      }
      if (gs[i].empty() || gs[i].size() > 4 || !all_of(gs[i], "0123456789abcdefABCDEF")) return false;
      ++n;
    }
    return true;
  };
  int n = 0;
  if (dc == std::string::npos) return groups(s, true, n) && n == 8;
  return groups(s.substr(0, dc), false, n) && groups(s.substr(dc + 2), true, n) && n <= 7;
}

// RFC 1123: labels of 1-63 letters, digits and hyphens, not beginning or ending with a hyphen;
// at most 253 characters; never the dotted-decimal form #.#.#.# (every label digits).
inline bool check_hostname(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  const auto labels = split(s, '.');
  bool all_digits = true;
  for (const std::string& l : labels) all_digits = all_digits && all_of(l, "0123456789");
  if (all_digits) return false;
  for (const std::string& l : labels)
    if (l.empty() || l.size() > 63 || l.front() == '-' || l.back() == '-' ||
        !all_of(l, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-"))
      return false;
  return true;
}

// RFC 3339 Appendix A: "P" then nW alone, or date units Y M D and / or "T" with time units H M S,
// each side a run of consecutive units (Y then M then D, never Y then D), at least one unit.
inline bool check_duration(const std::string& s) {
  if (s.size() < 3 || s[0] != 'P') return false;
  size_t i = 1;
  auto units = [&](const std::string& order, bool& any) {
    int next = -1;  // the index in `order` of the last unit read
    while (i < s.size() && isdigit(static_cast<unsigned char>(s[i]))) {
      const size_t start = i;
      while (i < s.size() && isdigit(static_cast<unsigned char>(s[i]))) ++i;
      if (i == start || i >= s.size()) return false;
      const size_t u = order.find(s[i]);
      if (u == std::string::npos || (next >= 0 && int(u) != next + 1)) return false;
      next = int(u);
      any = true;
      ++i;
    }
    return true;
  };
  if (s.back() == 'W') return s.size() > 2 && all_of(s.substr(1, s.size() - 2), "0123456789");
  bool any_date = false, any_time = false;
  if (!units("YMD", any_date)) return false;
  if (i < s.size()) {
    if (s[i] != 'T') return false;
    ++i;
    if (!units("HMS", any_time) || !any_time) return false;
  }
  return i == s.size() && (any_date || any_time);
}

// RFC 3986: an absolute URI (scheme ":" hier-part ["?" query] ["#" fragment]), or with `relative`
// a relative reference (no scheme; its first segment has no ':').
inline bool check_uri(const std::string& s, bool relative) {
  const std::string unreserved = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~";
  const std::string sub_delims = "!$&'()*+,;=";
  auto chars_ok = [&](const std::string& t, const std::string& extra) {
    const std::string allowed = unreserved + sub_delims + extra;
    for (size_t i = 0; i < t.size(); ++i) {
      if (t[i] == '%') {
        if (i + 2 >= t.size() || !isxdigit(static_cast<unsigned char>(t[i + 1])) ||
            !isxdigit(static_cast<unsigned char>(t[i + 2])))
          return false;
        i += 2;
        continue;
      }
      // A loop, not std::string::find: GCC 12 warns of a false over-read in find's inlined memchr here.
      bool in = false;
      for (char a : allowed) in = in || a == t[i];
      if (!in) return false;
    }
    return true;
  };
  std::string rest = s;
  if (!relative) {
    const size_t colon = s.find(':');
    if (colon == std::string::npos || colon == 0 || !isalpha(static_cast<unsigned char>(s[0]))) return false;
    if (!all_of(s.substr(0, colon), "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")) return false;
    rest = s.substr(colon + 1);
  }
  std::string fragment, query;
  const size_t hash = rest.find('#');
  if (hash != std::string::npos) fragment = rest.substr(hash + 1), rest = rest.substr(0, hash);
  const size_t q = rest.find('?');
  if (q != std::string::npos) query = rest.substr(q + 1), rest = rest.substr(0, q);
  if (!chars_ok(fragment, ":@/?") || !chars_ok(query, ":@/?")) return false;
  std::string path = rest;
  if (rest.rfind("//", 0) == 0) {
    const size_t slash = rest.find('/', 2);
    std::string authority = rest.substr(2, slash == std::string::npos ? std::string::npos : slash - 2);
    path = slash == std::string::npos ? "" : rest.substr(slash);
    const size_t at = authority.rfind('@');
    if (at != std::string::npos) {
      if (!chars_ok(authority.substr(0, at), ":")) return false;
      authority = authority.substr(at + 1);
    }
    const size_t colon = authority.rfind(':');
    if (colon != std::string::npos) {
      if (!all_of(authority.substr(colon + 1), "0123456789")) return false;
      authority = authority.substr(0, colon);
    }
    if (!chars_ok(authority, "")) return false;
  } else if (path.rfind("//", 0) == 0 || (relative && path.find(':') < path.find('/'))) {
    return false;  // "//" begins an authority; a relative path's first segment would read as a scheme
  }
  for (const std::string& seg : split(path, '/'))
    if (!chars_ok(seg, ":@")) return false;
  return true;
}

inline bool check_format(const std::string& f, const std::string& s) {
  if (f == "date") return check_date(s);
  if (f == "time") return check_time(s);
  if (f == "date-time") {
    const size_t t = s.find('T');
    return t != std::string::npos && check_date(s.substr(0, t)) && check_time(s.substr(t + 1));
  }
  if (f == "uuid") {
    if (s.size() != 36) return false;
    for (size_t i = 0; i < 36; ++i) {
      const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
      if (dash ? s[i] != '-' : !isxdigit(static_cast<unsigned char>(s[i]))) return false;
    }
    return true;
  }
  if (f == "ipv4") {
    int parts = 0;
    size_t i = 0;
    while (i <= s.size()) {
      size_t j = s.find('.', i);
      if (j == std::string::npos) j = s.size();
      const std::string p = s.substr(i, j - i);
      if (p.empty() || p.size() > 3 || !all_of(p, "0123456789") || (p.size() > 1 && p[0] == '0') || std::stoi(p) > 255)
        return false;
      ++parts;
      i = j + 1;
    }
    return parts == 4;
  }
  if (f == "email") {
    const size_t at = s.find('@');
    return at != std::string::npos && at > 0 && s.find('@', at + 1) == std::string::npos &&
           s.find('.', at) != std::string::npos && s.back() != '.';
  }
  if (f == "ipv6") return check_ipv6(s);
  if (f == "hostname") return check_hostname(s);
  if (f == "duration") return check_duration(s);
  if (f == "uri") return check_uri(s, false);
  if (f == "uri-reference") return check_uri(s, false) || check_uri(s, true);
  return false;
}

inline std::string validate(const ojson& v, const ojson& s, const ojson& root, const std::string& path = "$");

inline std::string validate_type(const ojson& v, const std::string& t) {
  bool ok = false;
  if (t == "object")
    ok = v.is_object();
  else if (t == "array")
    ok = v.is_array();
  else if (t == "string")
    ok = v.is_string();
  else if (t == "integer")
    ok = v.is_number_integer() || (v.is_number_float() && v.get<double>() == std::floor(v.get<double>()));
  else if (t == "number")
    ok = v.is_number();
  else if (t == "boolean")
    ok = v.is_boolean();
  else if (t == "null")
    ok = v.is_null();
  return ok ? "" : "not of type " + t;
}

inline std::string validate(const ojson& v, const ojson& s, const ojson& root, const std::string& path) {
  if (s.is_boolean()) return s.get<bool>() ? "" : path + ": schema false";
  auto fail = [&](const std::string& why) { return path + ": " + why + " (value " + v.dump() + ")"; };
  if (s.contains("$ref")) {
    std::string ptr = s["$ref"].get<std::string>().substr(1);
    return validate(v, ptr.empty() ? root : root.at(ojson::json_pointer(ptr)), root, path);
  }
  if (s.contains("const") && v != s["const"]) return fail("not the const");
  if (s.contains("enum")) {
    bool found = false;
    for (const auto& e : s["enum"]) found = found || e == v;
    if (!found) return fail("not in the enum");
  }
  if (s.contains("anyOf")) {
    bool any = false;
    for (const auto& sub : s["anyOf"]) any = any || validate(v, sub, root, path).empty();
    if (!any) return fail("matches no anyOf schema");
  }
  if (s.contains("oneOf")) {
    int n = 0;
    for (const auto& sub : s["oneOf"]) n += validate(v, sub, root, path).empty();
    if (n != 1) return fail("matches " + std::to_string(n) + " oneOf schemas");
  }
  if (s.contains("allOf"))
    for (const auto& sub : s["allOf"])
      if (auto e = validate(v, sub, root, path); !e.empty()) return e;
  if (s.contains("type")) {
    std::vector<std::string> types;
    if (s["type"].is_string())
      types.push_back(s["type"]);
    else
      for (const auto& t : s["type"]) types.push_back(t);
    bool ok = false;
    for (const auto& t : types) ok = ok || validate_type(v, t).empty();
    if (!ok) return fail("wrong type");
  }
  if (v.is_object()) {
    const ojson props = s.value("properties", ojson::object());
    if (s.contains("required"))
      for (const auto& r : s["required"])
        if (!v.contains(r.get<std::string>())) return fail("misses required " + r.dump());
    for (const auto& [k, x] : v.items()) {
      if (props.contains(k)) {
        if (auto e = validate(x, props[k], root, path + "." + k); !e.empty()) return e;
      } else if (s.contains("additionalProperties")) {
        if (auto e = validate(x, s["additionalProperties"], root, path + "." + k); !e.empty()) return e;
      }
    }
  }
  if (v.is_array()) {
    if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) return fail("too few items");
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) return fail("too many items");
    size_t first = 0;
    if (s.contains("prefixItems")) {
      for (; first < s["prefixItems"].size() && first < v.size(); ++first)
        if (auto e = validate(v[first], s["prefixItems"][first], root, path + "[" + std::to_string(first) + "]");
            !e.empty())
          return e;
    }
    if (s.contains("items"))
      for (size_t i = first; i < v.size(); ++i)
        if (auto e = validate(v[i], s["items"], root, path + "[" + std::to_string(i) + "]"); !e.empty()) return e;
  }
  if (v.is_string()) {
    const std::string str = v.get<std::string>();
    if (s.contains("minLength") && code_points(str) < s["minLength"].get<size_t>()) return fail("too short");
    if (s.contains("maxLength") && code_points(str) > s["maxLength"].get<size_t>()) return fail("too long");
    if (s.contains("pattern") && !pcre2_full_match(s["pattern"].get<std::string>(), str, false)) return fail("pattern");
    if (s.contains("format") && !check_format(s["format"].get<std::string>(), str)) return fail("format");
  }
  if (v.is_number()) {
    const double x = v.get<double>();
    if (s.contains("minimum") && x < s["minimum"].get<double>()) return fail("below minimum");
    if (s.contains("maximum") && x > s["maximum"].get<double>()) return fail("above maximum");
    if (s.contains("exclusiveMinimum") && x <= s["exclusiveMinimum"].get<double>())
      return fail("not above exclusiveMinimum");
    if (s.contains("exclusiveMaximum") && x >= s["exclusiveMaximum"].get<double>())
      return fail("not below exclusiveMaximum");
  }
  return "";
}

}  // namespace seam::grammar::test
