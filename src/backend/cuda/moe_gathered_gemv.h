// The batch-1 path of moe_experts on the dense GEMV kernel (gemv_experts.cu, launch_gemv_experts): the
// chosen experts' products stream at the dense decode GEMV's bandwidth instead of the gathered
// kernels' (Mixtral-8x7B's down at 2.48 TB/s, its gate_up at 3.8).
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"
#include "backend/cuda/moe_experts.h"
#include "core/tensor.h"

namespace seam::cuda {

// Whether the path runs: float16/bfloat16; hidden and inter multiples of 8; 16-byte aligned
// weights and rows of x and scratch.act; n * k <= 65535 (grid rows); and scratch.expert_out
// contiguous, 16-byte aligned, with room for n * k * hidden float32 (the unrounded expert
// outputs; MoeBuffers' [max_tokens * k, hidden] has it whenever n <= max_tokens / 2: always at
// one row of a step of two or more tokens).
bool moe_gathered_gemv_applies(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                               const Tensor& topk_ids, const MoeScratch& s);

// Backend::moe_experts in three kernels, launch sizes set by n and the shapes alone (the ids are
// read on the device: graph-replayable). Any n is computed; the rule uses it at one row, where
// each chosen expert's weights are read once either way.
//   gate_up: the dense GLU GEMV, grid row s = slot (token s / k, expert ids[s]):
//            act[s] = silu(gate_e x) * up_e x, rounded to x's dtype;
//   down:    the dense plain GEMV, grid row s: y[s] = down_e act[s] in float32, into
//            scratch.expert_out's memory viewed as float32 [n * k, hidden];
//   combine: out[i] += sum_j w_ij y[i * k + j] (j in order, float32, rounded and added once:
//            moe_combine.h), as the cpu definition. With tickets (the backend passes them only under
//            SEAM_MOE_FUSED_COMBINE=1, off by default: correct on the H200, measured slower)
//            it is folded into the down launch: its last block per token and output tile adds
//            that tile's sum (GemvExpertsCombine, gemv_experts.h; the same result, bit for bit).
// Deterministic (fixed slices and sum orders).
void launch_moe_gathered_gemv(const Tensor& out, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                              const Tensor& topk_ids, const Tensor& topk_weights, const MoeScratch& scratch,
                              cudaStream_t stream, const MoeTickets& tickets = {});

}  // namespace seam::cuda
