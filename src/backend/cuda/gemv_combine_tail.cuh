// The tail of the expert-indexed down GEMV's combine kernel (gemv_experts.cu, GemvExpertsCombine): the
// last of a token's k slot blocks of one output tile to finish adds the tile's weighted sum of
// the k slot outputs to the residual, as launch_moe_combine does. Included by gemv_experts.cu only.
#pragma once
#include "backend/cuda/cuda_common.cuh"

namespace seam::cuda {

// Called by every thread of every block (grid (tiles, n * k), block y = slot = token * k + j) once
// the block's rows of y[slot] are written. A tile holds items [blockIdx.x * kItems, + kItems) of
// n_out, each kRowsPerItem rows (item, item + n_out): the plain or paired epilogue's rows. The
// "last block done" pattern of post_norm_tail (gemv_post_norm.cuh), with one counter per
// (token, tile) counting the token's k slots: the block that counts k reads the k slots' rows
// back from L2 and adds sum_j weights[token][j] * y[token * k + j][h] (j in order, float32, as
// moe_combine_vec_kernel: the same sum, bit for bit) to out[token][h], rounded once. The counter
// is zero before the launch and left zero (graph replays reuse it).
template <typename T, int kItems, int kRowsPerItem>
__device__ __forceinline__ void combine_tail(const float* y, int64_t y_stride, T* out, int64_t out_stride,
                                             const float* weights, int k, int n_out, unsigned* counters) {
  __shared__ bool last;
  const int64_t token = blockIdx.y / k;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned* counter = counters + token * gridDim.x + blockIdx.x;
    __threadfence();
    const bool is_last = atomicAdd(counter, 1u) == unsigned(k) - 1u;
    if (is_last) {
      *counter = 0u;     // the token's k slots have counted in: zero for the next launch
      __threadfence();  // the others' writes before this block's reads (the barrier passes it on)
    }
    last = is_last;
  }
  __syncthreads();
  if (!last) return;  // block-uniform
  const int item0 = int(blockIdx.x) * kItems, n_items = min(kItems, n_out - item0);
  for (int t = threadIdx.x; t < kRowsPerItem * n_items; t += blockDim.x) {
    const int h = item0 + t % n_items + (t / n_items) * n_out;
    float acc = 0.f;
    for (int j = 0; j < k; ++j) {
      const float w = weights[token * k + j];
      acc += w * __ldcg(y + (token * k + j) * y_stride + h);  // L2: the other blocks wrote them
    }
    T* o = out + token * out_stride + h;
    *o = from_float<T>(to_float(*o) + acc);
  }
}

}  // namespace seam::cuda
