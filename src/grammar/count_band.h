// Stack-top mask sharing for length-bounded patterns (regex_length.h). A pattern's string under
// minLength / maxLength is a chain of state rules, one a (position, count) pair, so a string of n
// characters passes n distinct stack tops and each would get its own vocabulary walk
// (compute_position_mask): pydantic's HttpUrl (maxLength 2,083) cost 0.26 ms a mask against 0.012
// unbounded at a 4,000-token vocabulary (docs/performance.md, thirty-first pass).
//
// Yet two states of one position behave alike for any token when both counts lie in the band
// [min_len, band_hi - T]: T the vocabulary's longest token in bytes (a token has at most T
// characters), band_hi = max_len - D with D the most characters any live position still needs to
// reach a final one. From such a count every ending is allowed (count >= min_len) and every state
// a token of up to T characters reaches is live with the same successors (count + T + D <=
// max_len), so the walks from the two states accept the same tokens. The states' rules then have
// the same layout, and a stack top inside one is given the mask of the same place in the band's
// canonical state (its lowest count there). Tokens the mask leaves uncertain are still checked
// against the real stack, so this changes which masks are computed, never a mask's content.
//
// regex_length records each state rule's family (pattern and position), count and band ends in
// Grammar::count_band_states, which the lowering carries into GrammarProgram::band_states by rule id.
//
// A bounded repetition u{m,n} (a plain string's maxLength, an array's maxItems) is the same case:
// its optional tail O_k (up to k more units) behaves as O_{T+1} for every k > T, since a token of
// T bytes takes at most T units (each at least a byte) and so never reaches the tail's end; the
// lowering lists each tail's rules (GrammarProgram::repeat_chains).
#pragma once
#include <cstdint>
#include <vector>

#include "grammar/grammar_program.h"

namespace seam::grammar {

// [position] the position whose stack-top mask a frame at that position may use (itself where no
// band applies); empty when no rule of the program is in a band. max_token_bytes: T.
std::vector<uint32_t> count_band_aliases(const GrammarProgram& program, int max_token_bytes);

}  // namespace seam::grammar
