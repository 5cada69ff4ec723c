// PiecewiseGraphRunner: per token bucket, one graph per piece (the work
// between two attention calls). Replay runs piece 0, attention 0 (eager, on
// the real tokens, reading and writing the fixed bridge buffers), piece 1, ...
// The key is the token bucket alone: EXTEND and MIXED batches of the same
// size replay the same pieces, and attention still sees the real split.
//
// The runner knows neither the model nor the step buffers: it gets the pieces, the
// attention between them and the padding as closures (PiecewiseGraphWork).
#pragma once
#include <functional>
#include <vector>

#include "backend/backend.h"
#include "graph/graph_cache.h"

namespace seam {

struct PiecewiseGraphWork {
  int n_pieces = 0;  // pieces of one forward; attention runs after every piece but the last
  // Stages an all-padding batch of n_tokens rows and n_seqs sequences in the step buffers.
  std::function<void(int n_tokens, int n_seqs)> pad;
  // Piece `piece` on the first n_tokens rows of the step buffers (no mode-dependent work).
  std::function<void(int piece, int n_tokens)> run_piece;
  // Attention of layer `layer` on the real tokens `attn` describes, between two pieces.
  std::function<void(int layer, const AttentionBatch& attn)> run_attention;
};

class PiecewiseGraphRunner {
 public:
  PiecewiseGraphRunner(Backend& backend, std::vector<int> buckets, PiecewiseGraphWork work);
  void capture_all();
  void seal() { cache_.seal(); }
  int bucket_for(int n_tokens) const { return cache_.lookup(n_tokens); }  // 0 when above every captured key
  // Replays bucket T with `attn` describing the real tokens (attn.n_tokens <= T).
  void replay(int T, const AttentionBatch& attn);
  const GraphCacheStats& stats() const { return cache_.stats(); }

 private:
  GraphCache cache_;
  PiecewiseGraphWork work_;
};

}  // namespace seam
