// Decimal integers within bounds as a grammar expression, for JSON Schema's
// minimum/maximum on integers: the classic split of a range into runs of
// numbers of one length, each a product of digit classes. Canonical forms
// only (no leading zeros, no "-0"), so the size is O(digits^2).
#pragma once
#include <cstdint>
#include <optional>

#include "grammar/grammar_ir.h"

namespace seam::grammar {

// The integers x with lo <= x <= hi (a missing bound = unbounded that way).
// lo > hi matches nothing: the caller reports that.
Expr integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi);

}  // namespace seam::grammar
