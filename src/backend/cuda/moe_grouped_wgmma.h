// The grouped MoE GEMMs (moe_experts_grouped.h) on Hopper warpgroup MMA (wgmma, sm_90a).
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"
#include "backend/cuda/moe_experts_grouped.h"
#include "core/tensor.h"

namespace seam::cuda {

// Whether the wgmma kernels can run: moe_grouped_applies' arguments (16-bit, hidden and inter
// multiples of 8, 16-byte aligned rows), an sm_90a build and a compute capability 9.0 device.
bool moe_grouped_wgmma_applies(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down, const MoeScratch& s);

// The grouped path's `stages` (GroupedStages, in order; all of them = Backend::moe_experts) with
// the same inputs, scratch and results as the wmma kernels: align (M-tiles of 128 rows), gate_up
// (silu(gate) * up into scratch.act by sorted position), down (into scratch.expert_out by slot),
// combine. Block tiles of 128 rows x tile_n (128 or 256) B rows: down writes tile_n columns a
// block, gate_up tile_n / 2 (gate and up rows stacked). Launch sizes depend on n and the shapes
// alone (graph-capturable for any routing).
void launch_moe_grouped_wgmma(int tile_n, const Tensor& out, const Tensor& x, const Tensor& w_gate_up,
                              const Tensor& w_down, const Tensor& topk_ids, const Tensor& topk_weights,
                              const MoeScratch& scratch, int stages, cudaStream_t stream);

}  // namespace seam::cuda
