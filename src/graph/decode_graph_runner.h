// DecodeGraphRunner: one full graph per batch-size bucket: every piece, every
// attention and the logits of a DECODE batch padded to the bucket. Captured at
// start-up, largest first; replay only after that (sealed).
#pragma once
#include <map>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "graph/graph_stats.h"

namespace seam {

class ModelRunner;

class DecodeGraphRunner {
 public:
  DecodeGraphRunner(ModelRunner& runner, std::vector<int> buckets);
  void capture_all(GraphStats& stats);
  void seal() { sealed_ = true; }
  int bucket_for(int n_seqs) const;  // 0 when above every captured key
  // Replays the graph of `bs`; the step buffers already hold the batch padded to bs.
  void replay(int bs);

 private:
  void capture(int bs, GraphStats& stats);

  ModelRunner& runner_;
  std::vector<int> buckets_;  // ascending
  std::map<int, std::unique_ptr<Graph>> graphs_;
  bool sealed_ = false;
};

}  // namespace seam
