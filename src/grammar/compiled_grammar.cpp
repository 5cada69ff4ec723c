#include "grammar/compiled_grammar.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "grammar/count_band.h"

namespace seam::grammar {

CompiledGrammar::CompiledGrammar(const Grammar& g, std::shared_ptr<const TokenVocabulary> vocab,
                                 const CompileOptions& options)
    : program_(lower_grammar(g)),
      vocab_(std::move(vocab)),
      options_(options),
      state_masks_(options.state_mask_cache_bytes) {
  SEAM_CHECK(vocab_ != nullptr, "grammar: compiled without a vocabulary");
  for (const Element& e : program_.elements) n_byte_positions_ += e.kind == Element::Kind::kBytes;
  if (options.share_count_band_masks) {
    mask_alias_ = count_band_aliases(program_, int(std::min<size_t>(vocab_->max_token_bytes(), 1 << 20)));
    for (uint32_t p = 0; p < mask_alias_.size(); ++p) n_shared_mask_positions_ += mask_alias_[p] != p;
  }
  if (!options.precompute_masks) return;
  // The start state's stack tops: what every request's first mask needs.
  StackArena arena;
  StackStepper stepper(program_, arena);
  const ParserState start = stepper.start(program_.root_rule, kNoParent);
  for (int32_t s : start.stacks) {
    std::vector<uint32_t> frames;
    for (int32_t n = s; n >= 0 && frames.size() < kMaskContextFrames; n = arena[n].parent)
      frames.push_back(arena[n].pos);
    stack_top_mask(frames);
  }
}

std::shared_ptr<const PositionMask> CompiledGrammar::stack_top_mask(const std::vector<uint32_t>& given) const {
  // A frame in a count band's state stands for the same place in the band's canonical state: the same mask
  // (count_band.h), computed and kept once. The key is written from the aliased frames directly; the
  // aliased frames themselves are made only for a mask not yet kept.
  const auto frame = [&](size_t i) { return given[i] < mask_alias_.size() ? mask_alias_[given[i]] : given[i]; };
  std::string key(given.size() * sizeof(uint32_t), '\0');
  for (size_t i = 0; i < given.size(); ++i) {
    const uint32_t f = frame(i);
    std::memcpy(key.data() + i * sizeof(uint32_t), &f, sizeof(uint32_t));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = stack_top_masks_.find(key);
    if (it != stack_top_masks_.end()) return it->second;
  }
  std::vector<uint32_t> frames(given.size());
  for (size_t i = 0; i < given.size(); ++i) frames[i] = frame(i);
  // Computed outside the lock; two threads may both compute one, the first stays.
  auto mask = std::make_shared<const PositionMask>(compute_position_mask(program_, *vocab_, frames));
  std::lock_guard<std::mutex> lock(mu_);
  if (mask_bytes_ + mask->memory_bytes() > options_.stack_top_mask_bytes) return mask;
  const auto [it, fresh] = stack_top_masks_.try_emplace(key, mask);
  if (fresh) mask_bytes_ += mask->memory_bytes() + key.size() + 64;
  return it->second;
}

size_t CompiledGrammar::n_stack_top_masks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stack_top_masks_.size();
}

size_t CompiledGrammar::memory_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return program_.elements.size() * sizeof(Element) + program_.byte_sets.size() * sizeof(ByteSet) +
         program_.band_states.size() * sizeof(GrammarProgram::BandState) + mask_alias_.size() * sizeof(uint32_t) +
         mask_bytes_ + 256;
}

}  // namespace seam::grammar
