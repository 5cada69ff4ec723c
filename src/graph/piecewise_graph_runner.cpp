#include "graph/piecewise_graph_runner.h"

#include <chrono>

#include "graph/capture_progress.h"
#include "graph/graph_buckets.h"
#include "graph/graph_memory_meter.h"
#include "runtime/model_runner.h"

namespace seam {

PiecewiseGraphRunner::PiecewiseGraphRunner(ModelRunner& runner, std::vector<int> buckets)
    : runner_(runner), buckets_(std::move(buckets)) {}

int PiecewiseGraphRunner::bucket_for(int n_tokens) const {
  const int b = seam::bucket_for(buckets_, n_tokens);
  return b > 0 && graphs_.count(b) ? b : 0;
}

void PiecewiseGraphRunner::capture(int T, GraphStats& stats) {
  if (sealed_) {
    stats.captures_after_seal++;
    return;
  }
  ForwardBatch empty;
  runner_.upload(empty, T, 0);
  Backend& be = runner_.backend();
  LlamaModel& model = runner_.model();
  std::vector<std::unique_ptr<Graph>>& pieces = graphs_[T];
  for (int i = 0; i < model.n_pieces(); ++i) {
    model.run_piece(i, runner_.buffers(), runner_.kv(), T);  // warm-up
    be.synchronize();
    be.begin_capture();
    model.run_piece(i, runner_.buffers(), runner_.kv(), T);
    pieces.push_back(be.end_capture());
  }
  stats.captured_piecewise_keys++;
}

void PiecewiseGraphRunner::capture_all(GraphStats& stats) {
  Backend& be = runner_.backend();
  const auto t0 = std::chrono::steady_clock::now();
  const GraphMemoryMeter memory(be);
  CaptureProgress progress("piecewise graphs", int(buckets_.size()));
  for (auto it = buckets_.rbegin(); it != buckets_.rend(); ++it) {
    capture(*it, stats);
    progress.step(*it);
  }
  be.synchronize();
  stats.piecewise_graph_bytes = memory.bytes();
  stats.piecewise_capture_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  progress.done(stats.piecewise_capture_s, stats.piecewise_graph_bytes);
}

void PiecewiseGraphRunner::replay(int T, const AttentionBatch& attn) {
  SEAM_ASSERT(attn.n_tokens <= T);
  LlamaModel& model = runner_.model();
  const auto& pieces = graphs_.at(T);
  for (int i = 0; i < model.n_pieces(); ++i) {
    runner_.backend().replay(*pieces[size_t(i)]);
    if (i < model.config().n_layers) model.run_attention(i, runner_.buffers(), runner_.kv(), attn);
  }
}

}  // namespace seam
