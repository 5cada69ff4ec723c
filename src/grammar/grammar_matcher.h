// Per-request grammar state: which tokens may come next, and the parse after
// each accepted token. Cheap to copy (the stacks are small), and it keeps the
// state after every accepted token, so rollback(n) undoes the last n tokens --
// what a scheduler retract + re-prefill or a speculative draft needs.
//
// Usage per decode step: fill_next_token_bitmask(words) -> the sampler keeps
// only allowed ids -> accept_token(sampled id). A stop id (EOS) is allowed only
// where can_end(); accepting it makes is_terminated().
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/parser_stacks.h"

namespace seam::grammar {

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar);
  GrammarMatcher(const GrammarMatcher& other);
  GrammarMatcher& operator=(const GrammarMatcher& other);

  // Advances by one token; false (state unchanged) if the grammar forbids it
  // or the matcher has terminated.
  bool accept_token(int32_t id);
  // Advances by raw bytes (no token boundaries); false and unchanged if rejected.
  // Counts as one step for rollback.
  bool accept_bytes(std::string_view bytes);
  // Writes n_words() words: bit id set = id allowed next. All zero once terminated.
  void fill_next_token_bitmask(uint32_t* words);
  int n_words() const { return grammar_->vocab().n_words(); }

  bool can_end() const { return !terminated_ && current().can_end; }
  bool is_terminated() const { return terminated_; }
  // Undoes the last n accepted steps (tokens or accept_bytes calls); false if
  // fewer than n were accepted (then nothing changes).
  bool rollback(int n);
  int n_steps() const { return static_cast<int>(history_.size()) - 1 + (terminated_ ? 1 : 0); }
  void reset();
  const CompiledGrammar& grammar() const { return *grammar_; }

 private:
  const ParserState& current() const { return history_.back(); }
  void compute_mask(const ParserState& state, uint32_t* words);
  void check_uncertain(int32_t stack, const std::vector<int32_t>& ids, uint32_t* words);

  std::shared_ptr<const CompiledGrammar> grammar_;
  StackArena arena_;
  std::unique_ptr<StackStepper> stepper_;
  std::vector<ParserState> history_;  // [0] the start; back() the current state
  bool terminated_ = false;
  ParserState scratch_;
  std::vector<ParserState> depth_states_;  // check_uncertain's state after each prefix length
  std::string key_;
};

}  // namespace seam::grammar
