#include "grammar/compiled_grammar.h"

#include "core/error.h"

namespace seam::grammar {

CompiledGrammar::CompiledGrammar(const Grammar& g, std::shared_ptr<const TokenVocabulary> vocab,
                                 const CompileOptions& options)
    : program_(lower_grammar(g)), vocab_(std::move(vocab)), state_masks_(options.state_mask_cache_bytes) {
  SEAM_CHECK(vocab_ != nullptr, "grammar: compiled without a vocabulary");
  position_masks_.resize(program_.elements.size());
  for (uint32_t pos = 0; pos < program_.elements.size(); ++pos) {
    if (program_.elements[pos].kind != Element::Kind::kBytes) continue;
    ++n_byte_positions_;
    if (options.precompute_masks) position_mask(pos);
  }
}

const PositionMask& CompiledGrammar::position_mask(uint32_t pos) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (position_masks_[pos]) return *position_masks_[pos];
  }
  // Computed outside the lock; two threads may both compute it, the first one stays.
  auto mask = std::make_unique<const PositionMask>(compute_position_mask(program_, *vocab_, pos));
  std::lock_guard<std::mutex> lock(mu_);
  if (!position_masks_[pos]) {
    mask_bytes_ += mask->memory_bytes();
    position_masks_[pos] = std::move(mask);
  }
  return *position_masks_[pos];
}

size_t CompiledGrammar::memory_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return program_.elements.size() * sizeof(Element) + program_.byte_sets.size() * sizeof(ByteSet) +
         position_masks_.size() * sizeof(void*) + mask_bytes_ + 256;
}

}  // namespace seam::grammar
