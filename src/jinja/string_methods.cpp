#include "jinja/string_methods.h"

#include <algorithm>

#include "jinja/error.h"
#include "jinja/unicode.h"

namespace seam::jinja {

namespace {
bool in_set(char32_t cp, const std::vector<char32_t>& set) {
  for (char32_t c : set)
    if (c == cp) return true;
  return false;
}
}  // namespace

std::string py_strip(const std::string& s, const std::optional<std::string>& chars, bool left, bool right) {
  const std::vector<char32_t> cps = utf8_decode(s);
  const std::vector<char32_t> set = chars ? utf8_decode(*chars) : std::vector<char32_t>{};
  auto strip_it = [&](char32_t cp) { return chars ? in_set(cp, set) : is_space(cp); };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strip_it(cps[b])) ++b;
  if (right)
    while (e > b && strip_it(cps[e - 1])) --e;
  return utf8_encode(std::vector<char32_t>(cps.begin() + b, cps.begin() + e));
}

std::vector<std::string> py_split(const std::string& s, const std::optional<std::string>& sep, int64_t maxsplit,
                                  bool from_right) {
  std::vector<std::string> parts;
  if (sep) {
    if (from_right) {
      size_t end = s.size();
      while (maxsplit != 0) {
        if (end < sep->size()) break;
        const size_t p = s.rfind(*sep, end - sep->size());
        if (p == std::string::npos) break;
        parts.insert(parts.begin(), s.substr(p + sep->size(), end - p - sep->size()));
        end = p;
        --maxsplit;
      }
      parts.insert(parts.begin(), s.substr(0, end));
      return parts;
    }
    size_t start = 0;
    while (maxsplit != 0) {
      const size_t p = s.find(*sep, start);
      if (p == std::string::npos) break;
      parts.push_back(s.substr(start, p - start));
      start = p + sep->size();
      --maxsplit;
    }
    parts.push_back(s.substr(start));
    return parts;
  }
  // Whitespace split: runs of whitespace separate, leading/trailing runs vanish.
  const std::vector<char32_t> cps = utf8_decode(s);
  if (from_right) {
    int64_t i = static_cast<int64_t>(cps.size()) - 1;
    while (i >= 0) {
      while (i >= 0 && is_space(cps[i])) --i;
      if (i < 0) break;
      if (maxsplit == 0) {
        parts.insert(parts.begin(), utf8_encode(std::vector<char32_t>(cps.begin(), cps.begin() + i + 1)));
        break;
      }
      int64_t j = i;
      while (j >= 0 && !is_space(cps[j])) --j;
      parts.insert(parts.begin(), utf8_encode(std::vector<char32_t>(cps.begin() + j + 1, cps.begin() + i + 1)));
      --maxsplit;
      i = j;
    }
    return parts;
  }
  size_t i = 0;
  while (i < cps.size()) {
    while (i < cps.size() && is_space(cps[i])) ++i;
    if (i >= cps.size()) break;
    if (maxsplit == 0) {
      size_t e = cps.size();
      while (e > i && is_space(cps[e - 1])) --e;
      parts.push_back(utf8_encode(std::vector<char32_t>(cps.begin() + i, cps.begin() + e)));
      break;
    }
    size_t j = i;
    while (j < cps.size() && !is_space(cps[j])) ++j;
    parts.push_back(utf8_encode(std::vector<char32_t>(cps.begin() + i, cps.begin() + j)));
    --maxsplit;
    i = j;
  }
  return parts;
}

std::vector<std::string> py_splitlines(const std::string& s, bool keepends) {
  std::vector<std::string> lines;
  size_t start = 0, i = 0;
  while (i < s.size()) {
    if (s[i] == '\n' || s[i] == '\r') {
      size_t end = i + 1;
      if (s[i] == '\r' && end < s.size() && s[end] == '\n') ++end;
      lines.push_back(s.substr(start, (keepends ? end : i) - start));
      start = i = end;
    } else {
      ++i;
    }
  }
  if (start < s.size()) lines.push_back(s.substr(start));
  return lines;
}

std::string py_replace(const std::string& s, const std::string& old, const std::string& repl, int64_t count,
                       size_t max_size) {
  // The number of replacements first, so the result's size is known before it is built.
  int64_t matches = 0;
  if (old.empty()) {
    matches = static_cast<int64_t>(utf8_length(s)) + 1;
  } else {
    for (size_t p = s.find(old); p != std::string::npos && (count < 0 || matches < count);
         p = s.find(old, p + old.size()))
      ++matches;
  }
  if (count >= 0) matches = std::min(matches, count);
  check_repeat_size(s.size() - size_t(matches) * old.size(), repl.size(), matches, max_size);
  if (old.empty()) {  // Python inserts `repl` between every character (and at both ends)
    std::string out;
    size_t i = 0;
    int64_t n = 0;
    while (i <= s.size()) {
      if (count < 0 || n < count) {
        out += repl;
        ++n;
      }
      if (i == s.size()) break;
      const size_t start = i;
      utf8_next(s, i);
      out.append(s, start, i - start);
    }
    return out;
  }
  std::string out;
  size_t start = 0;
  int64_t n = 0;
  while (count < 0 || n < count) {
    const size_t p = s.find(old, start);
    if (p == std::string::npos) break;
    out.append(s, start, p - start);
    out += repl;
    start = p + old.size();
    ++n;
  }
  out.append(s, start, std::string::npos);
  return out;
}

std::string py_title(const std::string& s) {
  std::string out;
  bool prev_cased = false;
  size_t i = 0;
  while (i < s.size()) {
    const char32_t cp = utf8_next(s, i);
    const bool cased = to_upper(cp) != cp || to_lower(cp) != cp;
    utf8_append(out, cased ? (prev_cased ? to_lower(cp) : to_upper(cp)) : cp);
    prev_cased = cased;
  }
  return out;
}

std::string py_capitalize(const std::string& s) {
  std::string out;
  size_t i = 0;
  bool first = true;
  while (i < s.size()) {
    const char32_t cp = utf8_next(s, i);
    utf8_append(out, first ? to_upper(cp) : to_lower(cp));
    first = false;
  }
  return out;
}

int64_t py_find(const std::string& s, const std::string& sub, bool from_right) {
  const size_t p = from_right ? s.rfind(sub) : s.find(sub);
  if (p == std::string::npos) return -1;
  return static_cast<int64_t>(utf8_length(s.substr(0, p)));
}

int64_t py_count(const std::string& s, const std::string& sub) {
  if (sub.empty()) return static_cast<int64_t>(utf8_length(s)) + 1;
  int64_t n = 0;
  for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
  return n;
}

std::string py_center(const std::string& s, int64_t width, bool left, bool right, const std::string& fill,
                      size_t max_size) {
  const int64_t len = static_cast<int64_t>(utf8_length(s));
  if (width <= len) return s;
  const int64_t pad = width - len;
  check_repeat_size(s.size(), fill.size(), pad, max_size);
  int64_t l = 0, r = 0;
  if (left && right) {  // Python's center puts the odd space on the left when width is odd
    l = pad / 2 + (pad & width & 1);
    r = pad - l;
  } else if (left) {
    l = pad;
  } else {
    r = pad;
  }
  return py_repeat(fill, l) + s + py_repeat(fill, r);
}

std::string py_repeat(const std::string& s, int64_t n) {
  std::string out;
  if (s.empty()) return out;  // '' * 10**18 is '' at once, not after 10**18 empty appends
  if (n > 0) out.reserve(s.size() * size_t(n));
  for (int64_t i = 0; i < n; ++i) out += s;
  return out;
}

}  // namespace seam::jinja
