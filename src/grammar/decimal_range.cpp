#include "grammar/decimal_range.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>

#include "grammar/integer_range.h"
#include "grammar/schema_common.h"

namespace seam::grammar {

namespace {

constexpr double kMaxMagnitude = 1e15;  // integers exact in a double, as integer_range's callers use
constexpr size_t kMaxPlaces = 64;
constexpr double kPositive = 1e-30;  // x > 0 is enforced as x >= kPositive

// A non-negative decimal: integer part and fraction digits (no trailing zeros).
struct Decimal {
  uint64_t whole = 0;
  std::string fraction;
};

Expr digit_class(int a, int b) { return char_class({{static_cast<char32_t>('0' + a), static_cast<char32_t>('0' + b)}}); }
Expr any_digits() { return star(digit_class(0, 9)); }
Expr digit(int d) { return literal(std::string(1, static_cast<char>('0' + d))); }

// The shortest fixed-point text that reads back as v (v >= 0), split at its point.
Decimal to_decimal(double v, const char* keyword, const std::string& path) {
  char buf[512];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
  if (ec != std::errc()) schema_unsupported(keyword, path, "a bound this small is not supported");
  const std::string text(buf, end);
  const size_t point = text.find('.');
  Decimal d;
  d.whole = std::stoull(text.substr(0, point));
  if (point != std::string::npos) {
    d.fraction = text.substr(point + 1);
    while (!d.fraction.empty() && d.fraction.back() == '0') d.fraction.pop_back();
  }
  if (d.fraction.size() > kMaxPlaces)
    schema_unsupported(keyword, path, "bounds needing more than " + std::to_string(kMaxPlaces) + " decimal places are not supported");
  return d;
}

// Fraction digit strings F (read as 0.F, zeros padded) against a lower bound p and an upper bound
// q (both 0.digits); `low` / `high`: F still equals p / q on every digit so far (a tight bound).
class FractionRange {
 public:
  FractionRange(std::string p, std::string q) : p_(std::move(p)), q_(std::move(q)) {}

  // The rest of F from digit i (possibly nothing).
  Expr suffix(size_t i, bool low, bool high) const {
    if (!low && !high) return any_digits();
    if (i >= std::max(p_.size(), q_.size())) return high ? star(digit(0)) : any_digits();
    // Ending here pads with zeros: at least p only once p has no digit left (p has no trailing
    // zeros); at most q always.
    const bool can_end = !low || i >= p_.size();
    Expr next = digits(i, low, high);
    return can_end ? optional(std::move(next)) : next;
  }

  // At least one more digit from position i.
  Expr digits(size_t i, bool low, bool high) const {
    if (!low && !high) return plus(digit_class(0, 9));
    const int pd = i < p_.size() ? p_[i] - '0' : 0, qd = i < q_.size() ? q_[i] - '0' : 0;
    const int lo = low ? pd : 0, hi = high ? qd : 9;
    SEAM_ASSERT(lo <= hi, "decimal_range: a lower bound above the upper one");
    if (lo == hi) return seq({digit(lo), suffix(i + 1, low, high)});
    std::vector<Expr> alts;
    if (low) alts.push_back(seq({digit(lo), suffix(i + 1, true, false)}));
    const int inner_lo = low ? lo + 1 : lo, inner_hi = high ? hi - 1 : hi;
    if (inner_lo <= inner_hi) alts.push_back(seq({digit_class(inner_lo, inner_hi), any_digits()}));
    if (high) alts.push_back(seq({digit(hi), suffix(i + 1, false, true)}));
    return choice(std::move(alts));
  }

  // The fraction of a number whose integer part is fixed: "" or "." F.
  Expr part(bool low, bool high) const {
    const bool can_end = !low || p_.empty();
    Expr dotted = seq({literal("."), digits(0, low, high)});
    return can_end ? optional(std::move(dotted)) : dotted;
  }

 private:
  std::string p_, q_;
};

// Non-negative decimals within [a, b] (b missing: unbounded); a <= b.
Expr non_negative(const Decimal& a, const std::optional<Decimal>& b) {
  const bool low = !a.fraction.empty();
  if (b && a.whole == b->whole) return seq({literal(std::to_string(a.whole)), FractionRange(a.fraction, b->fraction).part(low, true)});
  std::vector<Expr> alts;
  alts.push_back(seq({literal(std::to_string(a.whole)), FractionRange(a.fraction, "").part(low, false)}));
  const uint64_t mid_lo = a.whole + 1;
  if (!b || mid_lo + 1 <= b->whole) {
    std::optional<int64_t> mid_hi;
    if (b) mid_hi = static_cast<int64_t>(b->whole - 1);
    alts.push_back(seq({integer_range(static_cast<int64_t>(mid_lo), mid_hi), optional(seq({literal("."), plus(digit_class(0, 9))}))}));
  }
  if (b) alts.push_back(seq({literal(std::to_string(b->whole)), FractionRange("", b->fraction).part(false, true)}));
  return choice(std::move(alts));
}

}  // namespace

Expr decimal_range(const NumberBounds& bounds, const std::string& path) {
  SEAM_ASSERT(bounds.lo || bounds.hi, "decimal_range: no bound");
  const char* lo_key = bounds.lo_exclusive ? "exclusiveMinimum" : "minimum";
  const char* hi_key = bounds.hi_exclusive ? "exclusiveMaximum" : "maximum";
  // Inclusive bounds (the header says why an exclusive one moves to the next double inward).
  std::optional<double> lo = bounds.lo, hi = bounds.hi;
  for (auto [v, key] : {std::pair{lo, lo_key}, std::pair{hi, hi_key}})
    if (v && !(std::fabs(*v) <= kMaxMagnitude))
      schema_unsupported(key, path, "number bounds beyond 1e15 are not supported");
  if (lo && bounds.lo_exclusive) lo = *lo == 0 ? kPositive : std::nextafter(*lo, std::numeric_limits<double>::infinity());
  if (hi && bounds.hi_exclusive) hi = *hi == 0 ? -kPositive : std::nextafter(*hi, -std::numeric_limits<double>::infinity());
  if (lo && hi && *lo > *hi) {
    const bool empty = *bounds.lo > *bounds.hi || (*bounds.lo == *bounds.hi && (bounds.lo_exclusive || bounds.hi_exclusive));
    if (empty) schema_invalid(path, "no number lies within its minimum and maximum");
    // Only the moves inward emptied it: an exclusive 0 with a bound under 1e-30, or bounds an ulp apart.
    schema_unsupported(bounds.lo_exclusive ? lo_key : hi_key, path, "exclusive bounds this close together are not supported");
  }
  std::vector<Expr> alts;
  // x >= 0: [max(lo, 0), hi].
  if (!hi || *hi >= 0) {
    const Decimal a = lo && *lo > 0 ? to_decimal(*lo, lo_key, path) : Decimal{};
    std::optional<Decimal> b;
    if (hi) b = to_decimal(*hi, hi_key, path);
    alts.push_back(non_negative(a, b));
  }
  // x < 0 as "-" y, y in [max(-hi, kPositive), -lo]: "-0" is never written.
  if (!lo || *lo < 0) {
    const double y_lo = hi && *hi < 0 ? -*hi : kPositive;
    const std::optional<double> y_hi = lo ? std::optional<double>(-*lo) : std::nullopt;
    if (!y_hi || y_lo <= *y_hi) {
      std::optional<Decimal> b;
      if (y_hi) b = to_decimal(*y_hi, lo_key, path);
      alts.push_back(seq({literal("-"), non_negative(to_decimal(y_lo, hi_key, path), b)}));
    }
  }
  if (alts.empty()) schema_invalid(path, "no number lies within its minimum and maximum");
  return alts.size() == 1 ? alts[0] : choice(std::move(alts));
}

}  // namespace seam::grammar
