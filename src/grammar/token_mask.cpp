#include "grammar/token_mask.h"

#include <algorithm>
#include <array>
#include <string>
#include <unordered_map>

namespace seam::grammar {

namespace {

// Walks the vocabulary trie from one stack top. The parser states met on the
// way are interned and their byte transitions memoized (a lazily built DFA),
// so a trie node costs a table lookup: inside a string every byte but a few
// leads back to the same state.
class PositionWalk {
 public:
  PositionWalk(const GrammarProgram& p, const TokenVocabulary& v, PositionMask& out)
      : vocab_(v), stepper_(p, arena_), out_(out) {}

  void run(const std::vector<uint32_t>& frames) {
    int32_t parent = kOpenParent;
    for (size_t i = frames.size(); i-- > 1;) parent = arena_.get(frames[i], parent);
    const int32_t start = intern(stepper_.at(frames[0], parent));
    walk(0, start, false);
  }

 private:
  static constexpr int32_t kDead = -1;
  static constexpr int32_t kUnknown = -2;

  int32_t intern(const ParserState& s) {
    if (s.stacks.empty() && !s.escaped) return kDead;
    std::string key(reinterpret_cast<const char*>(s.stacks.data()), s.stacks.size() * sizeof(int32_t));
    key.push_back(s.escaped ? 'e' : '-');
    const auto [it, fresh] = index_.try_emplace(std::move(key), static_cast<int32_t>(states_.size()));
    if (fresh) {
      states_.push_back(s);
      next_.emplace_back();
      next_.back().fill(kUnknown);
    }
    return it->second;
  }

  int32_t step(int32_t state, uint8_t b) {
    int32_t n = next_[static_cast<size_t>(state)][b];
    if (n == kUnknown) {
      stepper_.advance(states_[static_cast<size_t>(state)], b, tmp_);
      n = intern(tmp_);
      next_[static_cast<size_t>(state)][b] = n;
    }
    return n;
  }

  // Every token below `n` (longer than its prefix) is uncertain.
  void mark_subtree_uncertain(const TrieNode& n) {
    const auto& ids = vocab_.sorted_ids();
    for (uint32_t i = n.tokens_begin + n.n_here; i < n.tokens_end; ++i) out_.uncertain.push_back(ids[i]);
  }

  // `state`: after the bytes of the node's prefix; escaped_above: some path
  // returned past the frames with a strictly shorter prefix (so longer tokens
  // depend on the caller).
  void walk(uint32_t node_index, int32_t state, bool escaped_above) {
    const auto& trie = vocab_.trie();
    const auto& ids = vocab_.sorted_ids();
    const TrieNode node = trie[node_index];
    for (uint32_t c = node.children_begin; c < node.children_end; ++c) {
      const TrieNode& child = trie[c];
      const int32_t next = step(state, child.byte);
      const bool escaped_here = next != kDead && states_[static_cast<size_t>(next)].escaped;
      if (next == kDead || states_[static_cast<size_t>(next)].stacks.empty()) {
        // Tokens ending here: accepted when a path returned exactly at their end.
        for (uint32_t i = child.tokens_begin; i < child.tokens_begin + child.n_here; ++i) {
          if (escaped_here)
            set_bit(out_.accepted.data(), ids[i]);
          else if (escaped_above)
            out_.uncertain.push_back(ids[i]);
        }
        // Longer tokens: only a caller can take their remaining bytes.
        if (escaped_here || escaped_above) mark_subtree_uncertain(child);
        continue;
      }
      for (uint32_t i = child.tokens_begin; i < child.tokens_begin + child.n_here; ++i)
        set_bit(out_.accepted.data(), ids[i]);
      if (child.children_begin != child.children_end) walk(c, next, escaped_above || escaped_here);
    }
  }

  const TokenVocabulary& vocab_;
  StackArena arena_;
  StackStepper stepper_;
  PositionMask& out_;
  std::vector<ParserState> states_;                 // interned states
  std::vector<std::array<int32_t, 256>> next_;      // [state][byte] -> state, kDead or kUnknown
  std::unordered_map<std::string, int32_t> index_;  // state key -> index in states_
  ParserState tmp_;
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
