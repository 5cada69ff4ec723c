// RMSNorm of one row held in registers in fp8_row_quantize.cuh's chunk layout (thread t holds chunk
// c = s * kThreads + t in slot s, 8 values of T a chunk): the sum of squares in rms_norm.cu's 16-byte
// vector walk order (each thread over its slots, then block_sum), then each value (x * inv_rms) * g
// rounded to T in place. The one definition for every producer that norms a row it holds
// (fp8_rms_norm_quantize.cu's row kernel, fp8_scale_norm_quantize.cu), so their codes agree bit for
// bit. The squares are summed with explicit fused multiply-adds so no kernel's contraction choice can
// make them differ. Every thread of the block must call it (a block reduction). Included by .cu
// files only.
#pragma once
#include <cstdint>

#include "backend/cuda/cuda_common.cuh"

namespace seam::cuda {

template <typename T, int kThreads, int kChunks>
__device__ __forceinline__ void rms_norm_row_chunks(uint4 (&v)[kChunks], int n_chunks, const T* g, int n_in,
                                                    float eps, float* scratch) {
  float ss = 0.f;
#pragma unroll
  for (int s = 0; s < kChunks; ++s) {
    if (s * kThreads + int(threadIdx.x) >= n_chunks) continue;
    const T* e = reinterpret_cast<const T*>(&v[s]);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const float f = to_float(e[i]);
      ss = __fmaf_rn(f, f, ss);
    }
  }
  ss = block_sum(ss, scratch);
  const float inv_rms = 1.f / sqrtf(ss / float(n_in) + eps);
  const uint4* gr = reinterpret_cast<const uint4*>(g);
#pragma unroll
  for (int s = 0; s < kChunks; ++s) {
    const int c = s * kThreads + int(threadIdx.x);
    if (c >= n_chunks) continue;
    const uint4 w = gr[c];
    const T* we = reinterpret_cast<const T*>(&w);
    T* e = reinterpret_cast<T*>(&v[s]);
#pragma unroll
    for (int i = 0; i < 8; ++i) e[i] = from_float<T>(to_float(e[i]) * inv_rms * to_float(we[i]));
  }
}

}  // namespace seam::cuda
