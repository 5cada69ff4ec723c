// PiecewiseGraphRunner: per token bucket, one graph per piece (the work
// between two attention calls). Replay runs piece 0, attention 0 (eager, on
// the real tokens, reading and writing the fixed bridge buffers), piece 1, ...
// The key is the token bucket alone: EXTEND and MIXED batches of the same
// size replay the same pieces, and attention still sees the real split.
#pragma once
#include <map>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "graph/graph_stats.h"

namespace seam {

class ModelRunner;

class PiecewiseGraphRunner {
 public:
  PiecewiseGraphRunner(ModelRunner& runner, std::vector<int> buckets);
  void capture_all(GraphStats& stats);
  void seal() { sealed_ = true; }
  int bucket_for(int n_tokens) const;  // 0 when above every captured key
  // Replays bucket T with `attn` describing the real tokens (attn.n_tokens <= T).
  void replay(int T, const AttentionBatch& attn);

 private:
  void capture(int T, GraphStats& stats);

  ModelRunner& runner_;
  std::vector<int> buckets_;
  std::map<int, std::vector<std::unique_ptr<Graph>>> graphs_;  // T -> one graph per piece
  bool sealed_ = false;
};

}  // namespace seam
