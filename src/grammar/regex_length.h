// A pattern's strings of a bounded length, for JSON Schema's `pattern` / `format` beside
// `minLength` / `maxLength`: the intersection of two regular languages, built exactly as
// grammar rules (a Glushkov automaton of the pattern, one state a character position, times a
// count of characters so far), or refused when that grammar would be too large.
#pragma once
#include <string>

#include "grammar/grammar_ir.h"
#include "grammar/regex_to_grammar.h"

namespace seam::grammar {

// Limits on the construction (a hostile schema must not exhaust memory at compile time).
struct RegexLengthLimits {
  size_t max_positions = 2048;       // characters of the pattern once counted repeats are expanded
  size_t max_states = 200000;        // (position, count) pairs kept
  size_t max_transitions = 600000;   // their edges, ~3 program elements each (under kMaxProgramElements)
};

// The body of a JSON string (no quotes) whose decoded characters are matched by `ast` (with
// JSON Schema's search semantics: an end not anchored takes any characters) and number
// min_len .. max_len (max_len kUnbounded: no upper bound). Rules are added to g under names
// beginning with a fresh stem and containing '#' (no front end's fresh names do).
struct LengthBoundedPattern {
  enum class Status { kOk, kTooLarge, kEmpty };
  Status status = Status::kOk;
  Expr expr;           // kOk
  std::string detail;  // kTooLarge: which limit; kEmpty: why
};
LengthBoundedPattern length_bounded_pattern(const RegexAst& ast, int min_len, int max_len, Grammar& g,
                                            const RegexLengthLimits& limits = {});

// The fewest and most characters a string of the node can have (max: kUnbounded when any
// count is unbounded); the classes are not checked for emptiness, so the range may be wider
// than the language's, never narrower.
struct LengthRange {
  long long min = 0;
  long long max = 0;  // kUnbounded: no bound
};
LengthRange regex_length_range(const RegexNode& n);

}  // namespace seam::grammar
