#include "tokenizer/utf8.h"

namespace seam::utf8 {

namespace {
// Length of the valid sequence starting at s[pos]; 0 when invalid. When the
// input ends inside a sequence that is valid so far, *truncated is set.
size_t valid_length_at(std::string_view s, size_t pos, bool* truncated) {
  *truncated = false;
  const auto b0 = static_cast<unsigned char>(s[pos]);
  if (b0 < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlongs
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  for (size_t i = 1; i < n; ++i) {
    if (pos + i >= s.size()) {
      *truncated = true;
      return 0;
    }
    const auto b = static_cast<unsigned char>(s[pos + i]);
    const unsigned char l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
    if (b < l || b > h) return 0;
  }
  return n;
}

// Length of the maximal invalid subpart at pos (>= 1): the longest prefix of
// a would-be sequence that is still valid, or one byte.
size_t invalid_length_at(std::string_view s, size_t pos) {
  const auto b0 = static_cast<unsigned char>(s[pos]);
  size_t n = sequence_length(b0);
  if (n == 1) return 1;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 == 0xE0) lo = 0xA0;
  if (b0 == 0xED) hi = 0x9F;
  if (b0 == 0xF0) lo = 0x90;
  if (b0 == 0xF4) hi = 0x8F;
  size_t i = 1;
  for (; i < n && pos + i < s.size(); ++i) {
    const auto b = static_cast<unsigned char>(s[pos + i]);
    const unsigned char l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
    if (b < l || b > h) break;
  }
  return i;
}
}  // namespace

size_t sequence_length(unsigned char b) {
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) return 3;
  if (b >= 0xF0 && b <= 0xF4) return 4;
  return 1;
}

char32_t decode_at(std::string_view s, size_t pos, size_t* n_bytes) {
  const auto b0 = static_cast<unsigned char>(s[pos]);
  if (b0 < 0x80) {
    *n_bytes = 1;
    return b0;
  }
  const size_t n = sequence_length(b0);
  char32_t cp = b0 & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
  for (size_t i = 1; i < n && pos + i < s.size(); ++i) cp = (cp << 6) | (s[pos + i] & 0x3F);
  *n_bytes = n;
  return cp;
}

void append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

size_t find_invalid(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    if (static_cast<unsigned char>(s[pos]) < 0x80) {
      ++pos;
      continue;
    }
    bool truncated;
    const size_t n = valid_length_at(s, pos, &truncated);
    if (n == 0) return pos;
    pos += n;
  }
  return std::string_view::npos;
}

std::string to_valid_lossy(std::string_view s) {
  if (find_invalid(s) == std::string_view::npos) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  size_t pos = 0;
  while (pos < s.size()) {
    bool truncated;
    const size_t n = valid_length_at(s, pos, &truncated);
    if (n > 0) {
      out.append(s.substr(pos, n));
      pos += n;
    } else {
      out.append(kReplacementChar);
      pos += invalid_length_at(s, pos);
    }
  }
  return out;
}

size_t incomplete_tail(std::string_view s) {
  // A truncated sequence is at most 3 bytes long: look at the last 3 lead positions.
  for (size_t back = 1; back <= 3 && back <= s.size(); ++back) {
    const size_t pos = s.size() - back;
    const auto b = static_cast<unsigned char>(s[pos]);
    if ((b & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    bool truncated;
    valid_length_at(s, pos, &truncated);
    return truncated ? back : 0;
  }
  return 0;
}

}  // namespace seam::utf8
