#include "grammar/integer_range.h"

#include <string>

namespace seam::grammar {

namespace {

Expr digit_range(char a, char b) { return char_class({{static_cast<char32_t>(a), static_cast<char32_t>(b)}}); }
Expr any_digits(size_t n) { return repeat(digit_range('0', '9'), static_cast<int>(n), static_cast<int>(n)); }

// Fixed-width digit strings a..b (same length, leading zeros allowed).
Expr fixed_width(const std::string& a, const std::string& b) {
  const size_t n = a.size();
  if (n == 0) return empty();
  if (a == b) return literal(a);
  if (n == 1) return digit_range(a[0], b[0]);
  if (a[0] == b[0]) return seq({literal(a.substr(0, 1)), fixed_width(a.substr(1), b.substr(1))});
  std::vector<Expr> alts;
  const std::string nines(n - 1, '9'), zeros(n - 1, '0');
  alts.push_back(seq({literal(a.substr(0, 1)), fixed_width(a.substr(1), nines)}));
  if (b[0] - a[0] > 1)
    alts.push_back(seq({digit_range(static_cast<char>(a[0] + 1), static_cast<char>(b[0] - 1)), any_digits(n - 1)}));
  alts.push_back(seq({literal(b.substr(0, 1)), fixed_width(zeros, b.substr(1))}));
  return choice(std::move(alts));
}

uint64_t pow10(size_t n) {
  uint64_t p = 1;
  for (size_t i = 0; i < n; ++i) p *= 10;
  return p;
}

// Non-negative lo..hi (hi missing = unbounded), canonical decimal.
Expr unsigned_range(uint64_t lo, std::optional<uint64_t> hi) {
  std::vector<Expr> alts;
  const size_t lo_len = std::to_string(lo).size();
  const size_t max_len = hi ? std::to_string(*hi).size() : lo_len;
  for (size_t len = lo_len; len <= max_len; ++len) {
    const uint64_t first = len == 1 ? 0 : pow10(len - 1);
    const uint64_t last = len >= 20 ? UINT64_MAX : pow10(len) - 1;
    const uint64_t a = std::max(lo, first);
    const uint64_t b = hi ? std::min(*hi, last) : last;
    if (a > b) continue;
    alts.push_back(fixed_width(std::to_string(a), std::to_string(b)));
  }
  if (!hi) {
    // Every number longer than lo: [1-9][0-9]{lo_len,}
    alts.push_back(seq({digit_range('1', '9'), repeat(digit_range('0', '9'), static_cast<int>(lo_len), kUnbounded)}));
  }
  if (alts.empty()) return char_class({});
  return choice(std::move(alts));
}

}  // namespace

Expr integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  if (lo && hi && *lo > *hi) return char_class({});
  std::vector<Expr> alts;
  // Negative part: -(magnitude) with magnitude in [max(1, -hi), -lo].
  if (!lo || *lo < 0) {
    const uint64_t mag_lo = hi && *hi < 0 ? static_cast<uint64_t>(-(*hi + 1)) + 1 : 1;
    std::optional<uint64_t> mag_hi;
    if (lo) mag_hi = static_cast<uint64_t>(-(*lo + 1)) + 1;
    alts.push_back(seq({literal("-"), unsigned_range(mag_lo, mag_hi)}));
  }
  // Non-negative part: [max(0, lo), hi].
  if (!hi || *hi >= 0) {
    const uint64_t a = lo && *lo > 0 ? static_cast<uint64_t>(*lo) : 0;
    std::optional<uint64_t> b;
    if (hi) b = static_cast<uint64_t>(*hi);
    alts.push_back(unsigned_range(a, b));
  }
  return choice(std::move(alts));
}

}  // namespace seam::grammar
