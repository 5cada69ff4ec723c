// The grouped MoE GEMMs on Hopper wgmma, persistent and warp-specialised (sm_90a): the wgmma
// kernels' contract (moe_grouped_wgmma.h: same align with 128-row M-tiles, same epilogues,
// scratch and results), one block an SM looping over the tiles.
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"
#include "core/tensor.h"

namespace seam::cuda {

// The grouped path's `stages` (GroupedStages: align, gate_up, down, combine) as
// launch_moe_grouped_wgmma with 128 x 256 tiles, on grids of one block an SM; applies where
// moe_grouped_wgmma_applies does. Launch sizes depend on n, the shapes and the device alone
// (graph-capturable for any routing). tma: the TMA form (the weight tiles, and down's act tiles, by
// TMA boxes; the same results), where moe_grouped_wgmma_tma_applies; else the producer's cp.async.
void launch_moe_grouped_wgmma_persistent(const Tensor& out, const Tensor& x, const Tensor& w_gate_up,
                                         const Tensor& w_down, const Tensor& topk_ids, const Tensor& topk_weights,
                                         const MoeScratch& scratch, int stages, cudaStream_t stream, bool tma = false);
bool moe_grouped_wgmma_tma_applies(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                                   const MoeScratch& s);

}  // namespace seam::cuda
