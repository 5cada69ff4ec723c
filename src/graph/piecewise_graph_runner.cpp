#include "graph/piecewise_graph_runner.h"

namespace seam {

PiecewiseGraphRunner::PiecewiseGraphRunner(Backend& backend, std::vector<int> buckets, PiecewiseGraphWork work)
    : cache_(backend, "piecewise graphs", std::move(buckets)), work_(std::move(work)) {
  SEAM_ASSERT(work_.n_pieces > 0 && work_.pad && work_.run_piece && work_.run_attention,
              "PiecewiseGraphRunner needs its piece count and closures");
}

void PiecewiseGraphRunner::capture_all() {
  cache_.capture_all([&](int T) {
    work_.pad(T, 0);  // T padding tokens, no sequences: pieces see rows only
    for (int i = 0; i < work_.n_pieces; ++i) cache_.capture(T, [&] { work_.run_piece(i, T); });
  });
}

void PiecewiseGraphRunner::replay(int T, const AttentionBatch& attn) {
  SEAM_ASSERT(attn.n_tokens <= T);
  cache_.replay(T, [&](int layer) { work_.run_attention(layer, attn); });
}

}  // namespace seam
