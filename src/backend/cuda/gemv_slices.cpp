#include "backend/cuda/gemv_slices.h"

#include <cmath>

#include "core/error.h"

namespace seam::cuda {

// Measured against forced slice counts on the H200 (seam_kernel_bench and bench-one-batch,
// docs/performance.md, fourth pass): the rule picks the fastest count, or one within 0.6 us of
// it, for every 8B, 1B and 0.5B projection. The rule before it (split while the grid has fewer
// warps than the GPU has thread slots) ignored registers and cut slices below one sweep: it
// split 1B's o/down 8 and 4 ways (7.4 / 13.2 us against 4.2 / 10.3 at 2 slices).
int choose_gemv_slices(const GemvSliceQuery& q, const std::function<int(int slices)>& resident_warps) {
  SEAM_ASSERT(q.n_items > 0 && q.n_vec > 0 && q.sweep_vecs > 0, "GEMV slices: empty query");
  SEAM_ASSERT(q.max_slices == 1 || q.max_slices == 2 || q.max_slices == 4 || q.max_slices == 8,
              "GEMV slices: max_slices must be 1, 2, 4 or 8, got ", q.max_slices);
  constexpr double kFill = 0.8;
  // A pair with the norm stages x * g once per block at one slice, where more slices make every
  // warp re-read x and g: measured, one slice won for 8B's qkv+RoPE at 0.73 and 1.45 waves
  // (4.17-4.22 ms a step against 4.29 with 2 slices), while 1B's, at 0.36 waves, is faster at 2.
  constexpr double kStagedFill = 0.5;
  int best = 1;
  double best_fill = -1.0;
  for (int s = 1; s <= q.max_slices; s *= 2) {
    if (s > 1 && q.n_vec / s < q.sweep_vecs) break;
    const int slots = resident_warps(s);
    SEAM_ASSERT(slots > 0, "GEMV slices: no resident warps at ", s, " slices");
    const double waves = double(q.n_items) * s / slots;
    const double fill = waves / std::ceil(waves);  // of every wave, on average
    if (waves >= kFill && fill >= kFill) return s;
    if (s == 1 && q.staged_pair && waves >= kStagedFill) return s;
    if (fill > best_fill) best = s, best_fill = fill;
  }
  return best;
}

bool gemv_pairs_plain_rows(int64_t n_out, int64_t n_in, size_t elem_bytes) {
  constexpr int64_t kMinBytes = int64_t(16) << 20;
  constexpr int64_t kMinIn = 2048;
  return n_out > 0 && n_out % 2 == 0 && n_in >= kMinIn && n_out * n_in * int64_t(elem_bytes) >= kMinBytes;
}

}  // namespace seam::cuda
