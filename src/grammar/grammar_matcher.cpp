#include "grammar/grammar_matcher.h"

#include <cstdint>
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
  std::vector<uint32_t> frames;
  for (int32_t s : state.stacks) {
    frames.clear();
    for (int32_t f = s; f >= 0 && frames.size() < kMaskContextFrames; f = arena_[f].parent)
      frames.push_back(arena_[f].pos);
    const std::shared_ptr<const PositionMask> top = grammar_->stack_top_mask(frames);
    for (size_t w = 0; w < n; ++w) words[w] |= top->accepted[w];
    check_uncertain(s, top->uncertain, words);
  }
  arena_.truncate(mark);
  if (state.can_end)
    for (int32_t id : v.stop_ids()) set_bit(words, id);
}

// The uncertain tokens come sorted by their bytes (a trie walk's order), so
// each one reuses the states of the prefix it shares with the one before, and
// a prefix that died rejects every following token that shares it.
void GrammarMatcher::check_uncertain(int32_t stack, const std::vector<int32_t>& ids, uint32_t* words) {
  const TokenVocabulary& v = grammar_->vocab();
  if (depth_states_.empty()) depth_states_.resize(1);
  depth_states_[0].clear();
  depth_states_[0].stacks.push_back(stack);
  std::string_view prev;
  size_t dead_at = SIZE_MAX;  // prev's prefix of this length has no parse
  for (int32_t id : ids) {
    const std::string& b = v.bytes(id);
    size_t lcp = 0;
    while (lcp < prev.size() && lcp < b.size() && prev[lcp] == b[lcp]) ++lcp;
    prev = b;
    if (dead_at <= lcp) continue;
    if (test_bit(words, id)) {
      dead_at = SIZE_MAX;  // states past lcp are stale: recompute them for the next token
      prev = prev.substr(0, lcp);
      continue;
    }
    if (depth_states_.size() < b.size() + 1) depth_states_.resize(b.size() + 1);
    dead_at = SIZE_MAX;
    size_t d = lcp;
    for (; d < b.size(); ++d) {
      if (!stepper_->advance(depth_states_[d], static_cast<uint8_t>(b[d]), depth_states_[d + 1])) {
        dead_at = d + 1;
        break;
      }
    }
    if (d == b.size()) set_bit(words, id);
  }
}

}  // namespace seam::grammar
