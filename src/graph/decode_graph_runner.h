// DecodeGraphRunner: one full graph per batch-size bucket: every piece, every
// attention and the logits of a DECODE batch padded to the bucket. Captured at
// start-up, largest first, in a GraphCache; replay only after that (sealed).
//
// The runner knows neither the model nor the step buffers: it gets the work as closures
// (DecodeGraphWork), so graph/ depends on backend/ and core/ only.
#pragma once
#include <functional>
#include <vector>

#include "backend/backend.h"
#include "graph/graph_cache.h"

namespace seam {

struct DecodeGraphWork {
  // Stages an all-padding batch of n_tokens rows and n_seqs sequences in the step buffers
  // (the padding contract: token 0 at position 0 writing the scratch slot).
  std::function<void(int n_tokens, int n_seqs)> pad;
  // The whole eager forward of bs one-token rows on the step buffers: every piece, every
  // attention (decode attention, max_seq_len unknown) and the logits. Captured as one graph.
  std::function<void(int bs)> forward;
};

class DecodeGraphRunner {
 public:
  DecodeGraphRunner(Backend& backend, std::vector<int> buckets, DecodeGraphWork work);
  void capture_all();
  void seal() { cache_.seal(); }
  int bucket_for(int n_seqs) const { return cache_.lookup(n_seqs); }  // 0 when above every captured key
  // Replays the graph of `bs`; the step buffers already hold the batch padded to bs.
  void replay(int bs) { cache_.replay(bs); }
  const GraphCacheStats& stats() const { return cache_.stats(); }

 private:
  GraphCache cache_;
  DecodeGraphWork work_;
};

}  // namespace seam
