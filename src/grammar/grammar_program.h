// The flat, byte-level form of a grammar that the matcher runs: every rule is a
// list of alternatives, each a run of elements ending in kEnd; an element either
// consumes one byte from a 256-bit set or calls a rule. A "position" is an index
// into `elements`. UTF-8 classes become small rules of byte sequences, choices
// and repetitions become auxiliary rules (a star is right-recursive, which the
// matcher runs as a tail call, so loops do not deepen the stack).
// Invariant (checked by lower_grammar): no rule is left-recursive, so expanding
// the calls at a position always ends, and every expansion ends in byte elements
// or in the end of the root rule.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "grammar/grammar_ir.h"

namespace seam::grammar {

struct ByteSet {
  uint64_t bits[4] = {0, 0, 0, 0};
  bool test(uint8_t b) const { return (bits[b >> 6] >> (b & 63)) & 1; }
  void set(uint8_t b) { bits[b >> 6] |= uint64_t{1} << (b & 63); }
  void set_range(uint8_t lo, uint8_t hi) {
    for (int b = lo; b <= hi; ++b) set(static_cast<uint8_t>(b));
  }
  bool operator==(const ByteSet&) const = default;
};

struct Element {
  enum class Kind : uint8_t { kBytes, kRef, kEnd };
  Kind kind = Kind::kEnd;
  uint32_t arg = 0;  // kBytes: index into byte_sets; kRef: the rule id
};

struct GrammarProgram {
  std::vector<Element> elements;
  std::vector<ByteSet> byte_sets;
  std::vector<std::vector<uint32_t>> rule_alternatives;  // [rule] the start positions
  std::vector<std::string> rule_names;                   // [rule]
  uint32_t root_rule = 0;
  // Each bounded repetition's optional tail O_1 .. O_K (O_k: up to k more units, then the caller's
  // continuation), [k - 1] = O_k: count_band.h gives its rules far from the bound one mask.
  std::vector<std::vector<uint32_t>> repeat_chains;
  // The grammar's CountBandState entries by rule id, each family numbered (count_band.h).
  struct BandState {
    uint32_t rule = 0;
    uint32_t family = 0;
    int count = 0, min_len = 0, band_hi = 0;
  };
  std::vector<BandState> band_states;
};

// Limits that keep a hostile grammar from exhausting memory at compile time.
inline constexpr size_t kMaxProgramElements = size_t{1} << 21;
inline constexpr int kMaxRepeatCount = 10000;  // {m,n} bounds

// Lowers the IR. Throws seam::Error for an undefined rule, a missing root, a
// left-recursive rule (also what a repeated expression that can match nothing
// becomes) or a grammar over kMaxProgramElements.
GrammarProgram lower_grammar(const Grammar& g);

}  // namespace seam::grammar
