#include "graph/decode_graph_runner.h"

#include <chrono>
#include <cstdio>
#include <unistd.h>

#include "graph/capture_progress.h"
#include "graph/graph_buckets.h"
#include "graph/graph_memory_meter.h"
#include "runtime/model_runner.h"

namespace seam {

DecodeGraphRunner::DecodeGraphRunner(ModelRunner& runner, std::vector<int> buckets)
    : runner_(runner), buckets_(std::move(buckets)) {}

int DecodeGraphRunner::bucket_for(int n_seqs) const {
  const int b = seam::bucket_for(buckets_, n_seqs);
  return b > 0 && graphs_.count(b) ? b : 0;
}

void DecodeGraphRunner::capture(int bs, GraphStats& stats) {
  if (sealed_) {  // never reached by design; counted so tests can prove it
    stats.captures_after_seal++;
    return;
  }
  // An all-padding batch: every row is a padded decode row on the scratch slot.
  ForwardBatch empty;
  runner_.upload(empty, bs, bs);
  const AttentionBatch attn = runner_.attention_batch(bs, bs, 0, 0, /*max_seq_len unknown*/ 0);
  Backend& be = runner_.backend();
  runner_.run_layers_eager(bs, attn);  // warm-up: first-use set-up happens outside capture
  runner_.model().run_logits(runner_.buffers(), bs);
  be.synchronize();
  be.begin_capture();
  runner_.run_layers_eager(bs, attn);
  runner_.model().run_logits(runner_.buffers(), bs);
  graphs_[bs] = be.end_capture();
  stats.captured_decode_keys++;
}

void DecodeGraphRunner::capture_all(GraphStats& stats) {
  Backend& be = runner_.backend();
  const auto t0 = std::chrono::steady_clock::now();
  const GraphMemoryMeter memory(be);
  CaptureProgress progress("decode graphs", int(buckets_.size()));
  for (auto it = buckets_.rbegin(); it != buckets_.rend(); ++it) {  // largest first
    capture(*it, stats);
    progress.step(*it);
  }
  be.synchronize();
  stats.decode_graph_bytes = memory.bytes();
  stats.decode_capture_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  progress.done(stats.decode_capture_s, stats.decode_graph_bytes);
}

void DecodeGraphRunner::replay(int bs) {
  runner_.backend().replay(*graphs_.at(bs));
}

}  // namespace seam
