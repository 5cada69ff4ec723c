// One output of an FP8 product from cuBLASLt's unscaled float32 sum (fp8_cublaslt.h's unscaled
// route): (xs * ws) * sum, + bias, + the previous value when accumulating, rounded to T once. The
// one definition of that arithmetic for every kernel that consumes the sums (the scale epilogue,
// the qkv sums' RoPE + KV store in rope_from_fp8_sums.cu), so each is the decomposition's bit for bit.
// Included by .cu files only.
#pragma once
#include "backend/cuda/cuda_common.cuh"

namespace seam::cuda {

// Every operation rounded on its own (__fmul_rn / __fadd_rn: never contracted into an FMA), as
// the CPU definition (fp8_cpu.cpp) and the FP8 GEMV's epilogue compute it: with plain operators
// nvcc may fuse the bias or residual add into an FMA in one kernel and not in another, and the
// kernels that share this arithmetic would then differ in the last bit.
template <typename T>
__device__ __forceinline__ T scaled_output(float sum, float x_scale, float w_scale, const T* bias_o, const T* prev) {
  float y = __fmul_rn(__fmul_rn(x_scale, w_scale), sum);
  if (bias_o) y = __fadd_rn(y, to_float(*bias_o));
  return from_float<T>(prev ? __fadd_rn(to_float(*prev), y) : y);
}

// Eight consecutive outputs o .. o + 7 of one row (16-bit T): the row's sums read as two 16-byte
// vectors, bias (or null) and, when accumulating, the old outputs at out_o as one 16-byte vector each;
// scaled_output per element. The vector form every 16-byte consumer of the sums shares
// (fp8_scale_epilogue.cu, fp8_scale_norm_quantize.cu), so their outputs agree bit for bit.
template <typename T>
__device__ __forceinline__ uint4 scaled_output_chunk(const float* sums_row, float x_scale, const float* ws,
                                                     int64_t ws_step, int64_t o, const T* bias, const T* out_o,
                                                     bool accumulate) {
  static_assert(sizeof(T) == 2, "8 outputs of 16 bits: one 16-byte vector");
  const float4* sp = reinterpret_cast<const float4*>(sums_row + o);
  const float4 s0 = sp[0], s1 = sp[1];
  const float sum[8] = {s0.x, s0.y, s0.z, s0.w, s1.x, s1.y, s1.z, s1.w};
  const uint4 prev = accumulate ? *reinterpret_cast<const uint4*>(out_o) : make_uint4(0, 0, 0, 0);
  const uint4 b = bias ? *reinterpret_cast<const uint4*>(bias + o) : make_uint4(0, 0, 0, 0);
  const T* pe = reinterpret_cast<const T*>(&prev);
  const T* be = reinterpret_cast<const T*>(&b);
  uint4 r;
  T* re = reinterpret_cast<T*>(&r);
#pragma unroll
  for (int e = 0; e < 8; ++e)
    re[e] = scaled_output<T>(sum[e], x_scale, ws[(o + e) * ws_step], bias ? be + e : nullptr,
                             accumulate ? pe + e : nullptr);
  return r;
}

}  // namespace seam::cuda
