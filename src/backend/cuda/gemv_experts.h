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
void launch_gemv_experts(const Tensor& out, const Tensor& x, bool x_per_slot, const Tensor& w, const Tensor& ids,
                         bool glu, cudaStream_t stream);

}  // namespace seam::cuda
