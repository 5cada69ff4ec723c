// The tail of the batch-1 router GEMV's route kernel (gemv.cu, GemvFusion::route): the last of
// the grid's blocks to finish routes the logits row the grid wrote (softmax, top-k, renorm as
// launch_moe_route's warp kernel), so the moe_route launch drops out. Included by gemv.cu only.
#pragma once
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/moe_route_warp.cuh"

namespace seam::cuda {

// Called by every thread of every block once the block's share of logits [n_experts] is written.
// The "last block done" pattern of post_norm_tail (gemv_post_norm.cuh): a barrier, one thread's
// fence and count; the block that counts gridDim.x reads the whole row back from L2 and its
// first warp routes it with route_row_warp, the arithmetic of moe_route_warp_kernel: the same
// ids and weights, bit for bit. *counter is zero before the launch and left zero after it (graph
// replays reuse it). PDL: the next kernel's wait covers this whole grid, the ids included.
template <typename T>
__device__ __forceinline__ void route_tail(const T* logits, int32_t* ids, float* weights, int n_experts, int k,
                                           bool renormalize, unsigned* counter) {
  __shared__ bool last;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    const bool is_last = atomicAdd(counter, 1u) == gridDim.x - 1;
    if (is_last) {
      *counter = 0u;     // every block has counted in: zero for the next launch
      __threadfence();  // the others' writes before this block's reads (the barrier passes it on)
    }
    last = is_last;
  }
  __syncthreads();
  if (!last || threadIdx.x >= 32) return;  // block-uniform, then warp 0 only
  // __ldcg: L2, where the other blocks wrote their logits (this SM's L1 may not have seen them).
  route_row_warp_any(ids, weights, [&](int e) { return to_float(__ldcg(logits + e)); }, n_experts, k, renormalize);
}

}  // namespace seam::cuda
