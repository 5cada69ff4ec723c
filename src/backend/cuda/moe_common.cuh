// Device helpers the mixture-of-experts kernels share (gathered, grouped, shared expert).
#pragma once
#include <cstdint>

#include "backend/cuda/cuda_common.cuh"

namespace seam::cuda {

// topk_ids[slot], or expert 0 for an id outside [0, n_experts): padded rows may carry anything
// (Backend::moe_experts' contract), and they must still read a real expert.
__device__ __forceinline__ int expert_of(const int32_t* ids, int64_t slot, int n_experts) {
  const int e = ids[slot];
  return e < 0 || e >= n_experts ? 0 : e;
}

// The 8 16-bit elements of a 16-byte vector, as float32 (T: __half or __nv_bfloat16).
template <typename T>
__device__ __forceinline__ void unpack8(const uint4& raw, float (&f)[8]) {
  static_assert(sizeof(T) == 2, "unpack8: 16-bit elements");
  const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
  for (int i = 0; i < 8; ++i) f[i] = to_float(e[i]);
}

// out[r][h] = out[r][h] + term(r, h), formed in float32 and rounded once, for every r < n and
// h < hidden: a grid-stride loop (the experts' combine, the shared expert's gated add).
template <typename T, typename Term>
__device__ __forceinline__ void add_to_rows(T* out, int64_t out_stride, int64_t n, int hidden, Term term) {
  const int64_t n_items = n * hidden;
  for (int64_t it = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; it < n_items;
       it += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = it / hidden;
    const int h = int(it % hidden);
    T* o = out + r * out_stride + h;
    *o = from_float<T>(to_float(*o) + term(r, h));
  }
}

}  // namespace seam::cuda
