// Token masks. The part of a byte position's mask that does not depend on the
// stack below it (xgrammar's context-independent tokens) is computed once per
// position by walking the vocabulary trie from the single stack (pos, open
// caller): a token is *accepted* if some path consumes it without leaving the
// position's rule, *rejected* if every path dies inside the rule, and
// *uncertain* only if a path leaves the rule with bytes still to match -- those
// few are checked against the real stack at mask time.
// Bit layout: token id t is bit (t % 32) of word t / 32, as the GPU kernel reads it.
#pragma once
#include <cstdint>
#include <vector>

#include "grammar/grammar_program.h"
#include "grammar/parser_stacks.h"
#include "grammar/token_vocabulary.h"

namespace seam::grammar {

struct PositionMask {
  std::vector<uint32_t> accepted;  // [n_words] context-independent accepted tokens
  std::vector<int32_t> uncertain;  // tokens to check against the real stack
  size_t memory_bytes() const { return accepted.size() * 4 + uncertain.size() * 4; }
};

// The mask of byte position `pos` (an element of kind kBytes).
PositionMask compute_position_mask(const GrammarProgram& program, const TokenVocabulary& vocab, uint32_t pos);

inline void set_bit(uint32_t* words, int32_t id) { words[id >> 5] |= uint32_t{1} << (id & 31); }
inline bool test_bit(const uint32_t* words, int32_t id) { return (words[id >> 5] >> (id & 31)) & 1; }

}  // namespace seam::grammar
