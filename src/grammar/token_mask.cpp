#include "grammar/token_mask.h"

#include <algorithm>

namespace seam::grammar {

namespace {

class PositionWalk {
 public:
  PositionWalk(const GrammarProgram& p, const TokenVocabulary& v, PositionMask& out)
      : vocab_(v), stepper_(p, arena_), out_(out) {}

  void run(const std::vector<uint32_t>& frames) {
    size_t max_len = 0;
    for (int32_t id : vocab_.sorted_ids()) max_len = std::max(max_len, vocab_.bytes(id).size());
    states_.resize(max_len + 2);  // one per depth, never resized during the walk
    int32_t parent = kOpenParent;
    for (size_t i = frames.size(); i-- > 1;) parent = arena_.get(frames[i], parent);
    states_[0] = stepper_.at(frames[0], parent);
    walk(0, states_[0], false, 0);
  }

 private:
  // Every token below `n` (longer than its prefix) is uncertain.
  void mark_subtree_uncertain(const TrieNode& n) {
    const auto& ids = vocab_.sorted_ids();
    for (uint32_t i = n.tokens_begin + n.n_here; i < n.tokens_end; ++i) out_.uncertain.push_back(ids[i]);
  }

  // `state`: after the bytes of `node`'s prefix; escaped_above: some path left
  // the rule with a strictly shorter prefix (so longer tokens depend on the caller).
  void walk(uint32_t node_index, const ParserState& state, bool escaped_above, size_t depth) {
    const auto& trie = vocab_.trie();
    const auto& ids = vocab_.sorted_ids();
    const TrieNode node = trie[node_index];
    for (uint32_t c = node.children_begin; c < node.children_end; ++c) {
      const TrieNode& child = trie[c];
      ParserState& next = states_[depth + 1];
      stepper_.advance(state, child.byte, next);
      const bool escaped_here = next.escaped;
      if (next.stacks.empty()) {
        // Tokens ending here: accepted when a path left the rule exactly at their end.
        for (uint32_t i = child.tokens_begin; i < child.tokens_begin + child.n_here; ++i) {
          if (escaped_here) set_bit(out_.accepted.data(), ids[i]);
          else if (escaped_above) out_.uncertain.push_back(ids[i]);
        }
        // Longer tokens: only a caller can take their remaining bytes.
        if (escaped_here || escaped_above) mark_subtree_uncertain(child);
        continue;
      }
      for (uint32_t i = child.tokens_begin; i < child.tokens_begin + child.n_here; ++i)
        set_bit(out_.accepted.data(), ids[i]);
      if (child.children_begin == child.children_end) continue;
      // The walk below writes only states_[depth + 2] and deeper.
      walk(c, next, escaped_above || escaped_here, depth + 1);
    }
  }

  const TokenVocabulary& vocab_;
  StackArena arena_;
  StackStepper stepper_;
  PositionMask& out_;
  std::vector<ParserState> states_;
};

}  // namespace

PositionMask compute_position_mask(const GrammarProgram& program, const TokenVocabulary& vocab,
                                   const std::vector<uint32_t>& frames) {
  PositionMask out;
  out.accepted.assign(static_cast<size_t>(vocab.n_words()), 0);
  PositionWalk(program, vocab, out).run(frames);
  return out;
}

}  // namespace seam::grammar
