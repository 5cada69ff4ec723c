// The expert-indexed GEMV: the dense GEMV's kernel (gemv.h, gemv_kernel.cuh) with one expert's
// matrix per grid row; gemv_experts.cu.
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"

namespace seam::cuda {

// The expert-indexed GEMV (the batch-1 mixture-of-experts path, moe_gathered_gemv.h): one launch
// for n_slots = ids.numel() products on the dense kernel, grid row s for slot s. Slot s multiplies
// expert e = ids[s]'s matrix w[e] (an id outside [0, n_experts) reads expert 0, as
// Backend::moe_experts) with x's row s (x_per_slot) or s / k (k = ids.size(1): a token's row):
//   glu:   out[s] = silu(gate_e x) * up_e x, w [E, 2 * n_out, n_in] (gate rows, then up rows),
//          out [>= n_slots, n_out] in x's dtype (rounded once, as the dense GLU);
//   plain: out[s] = w_e x, w [E, n_out, n_in], out [>= n_slots, n_out] float32 (unrounded).
// The ids are read on the device after the PDL wait (the previous kernel writes them), so a
// captured launch replays for any routing; the weights' first loads wait for them too.
// x, w f16 or bf16 (one dtype), n_in % 8 == 0, w contiguous and 16-byte aligned, x's rows
// 16-byte aligned, ids [n, k] i32 contiguous, n_slots <= 65535 (grid rows).
bool gemv_experts_applies(const Tensor& out, const Tensor& x, bool x_per_slot, const Tensor& w, const Tensor& ids,
                          bool glu);
// The combine folded into a plain (down) launch of one token a k slots (x per slot): the last of
// the k blocks of an output tile to finish (a self-resetting arrival counter per token and tile)
// adds that tile of sum_j topk_weights[i][j] * out[i * k + j] (j in order, float32) to
// combine.out[i], rounded once: launch_moe_combine's arithmetic, bit for bit, and its launch
// drops out. combine.out [n, n_out] in x's dtype (row stride free, elements contiguous),
// topk_weights [n, k] f32 contiguous; counters: n_counters words, zero before the launch and
// left zero, that no other kernel touches while it runs.
struct GemvExpertsCombine {
  Tensor out, topk_weights;
  unsigned* counters = nullptr;
  int64_t n_counters = 0;
};
// Returns whether it combined (combine given, a plain product, and n * tiles <= n_counters); if
// not, out holds the slots' products and the caller combines.
bool launch_gemv_experts(const Tensor& out, const Tensor& x, bool x_per_slot, const Tensor& w, const Tensor& ids,
                         bool glu, cudaStream_t stream, const GemvExpertsCombine* combine = nullptr);
// Launches of the folded combine (above) in this process so far, host side (a capture counts
// once, its replays not), as gemv_post_norm_launches (gemv.h).
int64_t gemv_experts_combine_launches();

}  // namespace seam::cuda
