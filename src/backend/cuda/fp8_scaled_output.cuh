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

}  // namespace seam::cuda
