// The mid-batch path of moe_experts on tensor cores: the skinny grouped products (moe_skinny.h)
// with the dense skinny GEMM's m16n8k16 layout (skinny_gemm.cu), so a chunk of up to 16 rows an
// expert costs the weights' streaming time and next to no ALU work.
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"
#include "core/tensor.h"

namespace seam::cuda {

// Whether it can run: moe_skinny_applies, and hidden and inter multiples of 32 (the mma chunk).
bool moe_skinny_mma_applies(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down, const Tensor& topk_ids,
                            const MoeScratch& s);

// Backend::moe_experts in three kernels, launch sizes set by n and the shapes alone (grid rows
// per expert as in moe_skinny.h):
//   gate_up: block (8 intermediate features, expert e): the block collects e's slots in slot order
//            (collect_slots; none: it exits); its 16 mma A rows are the gate rows f0..f0+7 and the
//            up rows inter+f0..; the 8 warps split K (hidden) and stream their part once per
//            chunk of up to 16 slots (the B columns: x[slot / k]); shared memory sums the warps;
//            act[slot][f] = silu(gate) * up, rounded to T.
//   down:    block (two tiles of 16 outputs, one after the other, expert e), the same with
//            A = down rows, B = act[slot]; expert_out[slot][h], rounded to T;
//   combine: out[i] += sum_j w_ij expert_out[i * k + j] (moe_combine.h).
// Deterministic: fixed slot order, per-warp mma order, warps summed in order.
void launch_moe_experts_skinny_mma(const Tensor& out, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                                   const Tensor& topk_ids, const Tensor& topk_weights, const MoeScratch& scratch,
                                   cudaStream_t stream);

// The two products alone (which: 1 gate_up, 2 down, 3 both; no combine): for seam_kernel_bench's
// A/B against moe_skinny_mma_stream.h.
void launch_moe_skinny_mma_stages(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                                  const Tensor& topk_ids, const MoeScratch& scratch, int which, cudaStream_t stream);

}  // namespace seam::cuda
