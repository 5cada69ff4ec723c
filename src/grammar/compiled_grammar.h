// A grammar compiled against one vocabulary: the byte-level program, the
// vocabulary, the context-independent masks per stack top (token_mask.h;
// computed on first use, or at compile time for the stack tops of the start
// state, then shared) and a bounded cache of whole masks keyed by the full
// parser state. Immutable to its users apart from those
// caches, which are thread-safe: one CompiledGrammar serves every request
// that uses the same grammar text, on any thread.
#pragma once
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar_ir.h"
#include "grammar/grammar_program.h"
#include "grammar/lru_cache.h"
#include "grammar/token_mask.h"
#include "grammar/token_vocabulary.h"

namespace seam::grammar {

struct CompileOptions {
  bool precompute_masks = true;  // the start state's stack-top masks at compile time (else on first use)
  size_t stack_top_mask_bytes = size_t{16} << 20;   // beyond this, stack-top masks are computed but not kept
  size_t state_mask_cache_bytes = size_t{4} << 20;  // the per-grammar cache of masks by parser state
  bool share_count_band_masks = true;  // count_band.h: one stack-top mask for a length-bounded pattern's like states
};

class CompiledGrammar {
 public:
  // Lowers `g` (throws seam::Error for a bad grammar) for `vocab`.
  CompiledGrammar(const Grammar& g, std::shared_ptr<const TokenVocabulary> vocab, const CompileOptions& options = {});

  const GrammarProgram& program() const { return program_; }
  const TokenVocabulary& vocab() const { return *vocab_; }
  const std::shared_ptr<const TokenVocabulary>& vocab_ptr() const { return vocab_; }

  // The context-independent mask of a stack top (see compute_position_mask;
  // thread-safe; computed on first use).
  std::shared_ptr<const PositionMask> stack_top_mask(const std::vector<uint32_t>& frames) const;
  size_t n_stack_top_masks() const;
  LruCache<std::vector<uint32_t>>& state_masks() const { return state_masks_; }

  // Bytes held: the program and the stack-top masks kept so far (not the
  // state-mask cache, which has its own bound).
  size_t memory_bytes() const;
  size_t n_byte_positions() const { return n_byte_positions_; }
  // Positions whose stack-top masks are another position's (count_band.h); 0 without bands.
  size_t n_shared_mask_positions() const { return n_shared_mask_positions_; }

 private:
  GrammarProgram program_;
  std::shared_ptr<const TokenVocabulary> vocab_;
  size_t n_byte_positions_ = 0;
  std::vector<uint32_t> mask_alias_;  // count_band_aliases (empty: every position its own)
  size_t n_shared_mask_positions_ = 0;
  mutable std::mutex mu_;
  CompileOptions options_;
  mutable std::unordered_map<std::string, std::shared_ptr<const PositionMask>> stack_top_masks_;
  mutable size_t mask_bytes_ = 0;
  mutable LruCache<std::vector<uint32_t>> state_masks_;
};

}  // namespace seam::grammar
