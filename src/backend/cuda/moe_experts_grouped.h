// The large-batch path of moe_experts: rows grouped by expert, then grouped GEMMs.
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"
#include "core/tensor.h"

namespace seam::cuda {

// Whether the grouped path can run: float16/bfloat16, the grouping scratch given (expert_out,
// index), hidden and inter multiples of 8, 16-byte aligned rows, at most kMaxGroupedExperts.
constexpr int kMaxGroupedExperts = 4096;
bool moe_grouped_applies(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down, const MoeScratch& s);

// Backend::moe_experts in four kernels, every one sized by n alone (a graph replays it for any
// routing; nothing is read back to the host):
//   align:   per-expert counts of the n * k (row, expert) slots, their offsets and M-tile starts,
//            and the slots sorted by expert (scratch.index = [offsets | tile starts | sorted]);
//   gate_up: a grouped GEMM over tiles of one expert's slots (x rows gathered), silu(gate) * up
//            in the epilogue, into scratch.act by sorted position (both GEMMs feed their wmma
//            tiles through a 3-stage cp.async pipeline; SEAM_MOE_GROUPED_PIPELINE=0, a diagnostic
//            switch, loads them one k-step at a time as before);
//   down:    a grouped GEMM of those rows with the expert's down, scattered to scratch.expert_out
//            by slot;
//   combine: out[i] += sum_j w_ij expert_out[i * k + j] (j in order, float32, added once;
//            moe_combine.h).
// The GEMMs launch the most tiles any routing can need (n * k / 64 + n_experts); blocks past the
// step's tile count exit at once.
void launch_moe_experts_grouped(const Tensor& out, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                                const Tensor& topk_ids, const Tensor& topk_weights, const MoeScratch& scratch,
                                cudaStream_t stream);

}  // namespace seam::cuda
