#include "grammar/grammar_matcher.h"

#include <cstring>

#include "core/error.h"

namespace seam::grammar {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar) : grammar_(std::move(grammar)) {
  SEAM_CHECK(grammar_ != nullptr, "grammar: a matcher needs a compiled grammar");
  stepper_ = std::make_unique<StackStepper>(grammar_->program(), arena_);
  reset();
}

GrammarMatcher::GrammarMatcher(const GrammarMatcher& other)
    : grammar_(other.grammar_),
      arena_(other.arena_),
      stepper_(std::make_unique<StackStepper>(grammar_->program(), arena_)),
      history_(other.history_),
      terminated_(other.terminated_) {}

GrammarMatcher& GrammarMatcher::operator=(const GrammarMatcher& other) {
  if (this == &other) return *this;
  grammar_ = other.grammar_;
  arena_ = other.arena_;
  stepper_ = std::make_unique<StackStepper>(grammar_->program(), arena_);
  history_ = other.history_;
  terminated_ = other.terminated_;
  return *this;
}

void GrammarMatcher::reset() {
  history_.clear();
  history_.push_back(stepper_->start(grammar_->program().root_rule, kNoParent));
  terminated_ = false;
}

bool GrammarMatcher::accept_token(int32_t id) {
  const TokenVocabulary& v = grammar_->vocab();
  if (terminated_ || id < 0 || id >= v.vocab_size()) return false;
  if (v.is_stop(id)) {
    if (!current().can_end) return false;
    terminated_ = true;
    return true;
  }
  if (!v.in_trie(id)) return false;
  return accept_bytes(v.bytes(id));
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  if (terminated_) return false;
  scratch_ = current();
  if (!stepper_->advance_all(scratch_, bytes)) return false;
  history_.push_back(scratch_);
  return true;
}

bool GrammarMatcher::rollback(int n) {
  if (n < 0 || n > n_steps()) return false;
  if (n > 0 && terminated_) {
    terminated_ = false;
    --n;
  }
  history_.resize(history_.size() - static_cast<size_t>(n));
  return true;
}

void GrammarMatcher::fill_next_token_bitmask(uint32_t* words) {
  const size_t n = static_cast<size_t>(n_words());
  if (terminated_) {
    std::memset(words, 0, n * 4);
    return;
  }
  const ParserState& state = current();
  // The whole mask is a function of the full state: look it up by the stacks' positions.
  key_.clear();
  for (int32_t s : state.stacks) stepper_->append_key(s, key_);
  key_.push_back(state.can_end ? 'E' : '-');
  LruCache<std::vector<uint32_t>>& cache = grammar_->state_masks();
  if (const auto hit = cache.find(key_)) {
    std::memcpy(words, hit->data(), n * 4);
    return;
  }
  compute_mask(state, words);
  cache.insert(key_, std::make_shared<const std::vector<uint32_t>>(words, words + n), n * 4 + key_.size() + 64);
}

void GrammarMatcher::compute_mask(const ParserState& state, uint32_t* words) {
  const TokenVocabulary& v = grammar_->vocab();
  const size_t n = static_cast<size_t>(n_words());
  std::memset(words, 0, n * 4);
  const size_t mark = arena_.size();  // nodes made below are scratch
  ParserState single;
  std::vector<uint32_t> frames;
  for (int32_t s : state.stacks) {
    frames.clear();
    for (int32_t f = s; f >= 0 && frames.size() < kMaskContextFrames; f = arena_[f].parent) frames.push_back(arena_[f].pos);
    const std::shared_ptr<const PositionMask> top = grammar_->stack_top_mask(frames);
    const PositionMask& pm = *top;
    for (size_t w = 0; w < n; ++w) words[w] |= pm.accepted[w];
    for (int32_t id : pm.uncertain) {
      if (test_bit(words, id)) continue;
      single.clear();
      single.stacks.push_back(s);
      if (stepper_->advance_all(single, v.bytes(id))) set_bit(words, id);
    }
  }
  arena_.truncate(mark);
  if (state.can_end)
    for (int32_t id : v.stop_ids()) set_bit(words, id);
}

}  // namespace seam::grammar
