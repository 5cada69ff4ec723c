// JSON numbers within bounds as a grammar expression, for JSON Schema's minimum / maximum /
// exclusiveMinimum / exclusiveMaximum on "number" (integer_range does "integer").
//
// What it accepts: plain decimals, -?(0|[1-9][0-9]*)(\.[0-9]+)?, whose exact decimal value lies
// within the bounds; no exponent form (1e5), so the language is regular and exact. Each bound is
// taken as the shortest decimal that reads back as the same double (0.1 as "0.1"). Since rounding
// to the nearest double is monotonic, a decimal within an inclusive bound parses to a double
// within it too. An exclusive bound b is enforced as the inclusive bound at the next double
// toward the interior (x < 0.5 as x <= 0.49999999999999994), so that no decimal the grammar
// accepts can round onto b itself; an exclusive bound at 0 as 1e-30 (x > 0 as x >= 1e-30). The
// grammar may therefore refuse a few values a validator would take (exponents, values within an
// ulp of an exclusive bound, magnitudes under 1e-30 beside a 0 bound), never the reverse.
#pragma once
#include <optional>
#include <string>

#include "grammar/grammar_ir.h"

namespace seam::grammar {

struct NumberBounds {
  std::optional<double> lo, hi;
  bool lo_exclusive = false, hi_exclusive = false;
};

// At least one bound is set. Bounds past 1e15 in magnitude, or needing more than 64 decimal
// places, are an "unsupported JSON Schema keyword" error at `path`; bounds that leave no number
// an "invalid JSON Schema" error.
Expr decimal_range(const NumberBounds& bounds, const std::string& path);

}  // namespace seam::grammar
