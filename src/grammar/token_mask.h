// Token masks. The part of a stack's mask that does not depend on what lies
// below its top frames (xgrammar's context-independent tokens) is computed once
// per *stack top* -- the top position and the return positions of up to
// kMaskContextFrames - 1 callers, with an unknown caller below -- by walking
// the vocabulary trie: a token is *accepted* if some path consumes it without
// returning past those frames, *rejected* if every path dies inside them, and
// *uncertain* only if a path returns past them with bytes still to match --
// those few are checked against the real stack at mask time. Several frames
// (not just the top rule) matter because choices, repetitions and classes are
// small rules of their own: with one frame, every token longer than one byte
// inside a string would be uncertain.
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

inline constexpr int kMaskContextFrames = 4;

// The mask of a stack top: frames[0] is a byte position, frames[i > 0] the
// return position of the i-th caller (at most kMaskContextFrames in all).
PositionMask compute_position_mask(const GrammarProgram& program, const TokenVocabulary& vocab,
                                   const std::vector<uint32_t>& frames);

inline void set_bit(uint32_t* words, int32_t id) { words[id >> 5] |= uint32_t{1} << (id & 31); }
inline bool test_bit(const uint32_t* words, int32_t id) { return (words[id >> 5] >> (id & 31)) & 1; }

}  // namespace seam::grammar
