// A grammar compiled against one vocabulary: the byte-level program, the
// vocabulary, the per-position context-independent masks (computed lazily or
// all at once by precompute(), then shared) and a bounded cache of whole masks
// keyed by the full parser state. Immutable to its users apart from those
// caches, which are thread-safe: one CompiledGrammar serves every request
// that uses the same grammar text, on any thread.
#pragma once
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "grammar/grammar_ir.h"
#include "grammar/grammar_program.h"
#include "grammar/lru_cache.h"
#include "grammar/token_mask.h"
#include "grammar/token_vocabulary.h"

namespace seam::grammar {

struct CompileOptions {
  bool precompute_masks = true;                // all position masks at compile time (else on first use)
  size_t state_mask_cache_bytes = size_t{4} << 20;  // the per-grammar cache of masks by parser state
};

class CompiledGrammar {
 public:
  // Lowers `g` (throws seam::Error for a bad grammar) for `vocab`.
  CompiledGrammar(const Grammar& g, std::shared_ptr<const TokenVocabulary> vocab, const CompileOptions& options = {});

  const GrammarProgram& program() const { return program_; }
  const TokenVocabulary& vocab() const { return *vocab_; }
  const std::shared_ptr<const TokenVocabulary>& vocab_ptr() const { return vocab_; }

  // The context-independent mask of byte position `pos` (thread-safe).
  const PositionMask& position_mask(uint32_t pos) const;
  LruCache<std::vector<uint32_t>>& state_masks() const { return state_masks_; }

  // Bytes held: the program and the position masks (not the state-mask cache,
  // which has its own bound). The compile cache charges a grammar this much.
  size_t memory_bytes() const;
  size_t n_byte_positions() const { return n_byte_positions_; }

 private:
  GrammarProgram program_;
  std::shared_ptr<const TokenVocabulary> vocab_;
  size_t n_byte_positions_ = 0;
  mutable std::mutex mu_;
  mutable std::vector<std::unique_ptr<const PositionMask>> position_masks_;  // [pos], null until computed
  mutable size_t mask_bytes_ = 0;
  mutable LruCache<std::vector<uint32_t>> state_masks_;
};

}  // namespace seam::grammar
