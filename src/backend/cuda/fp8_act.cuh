// Device pieces of the FP8 activation quantization (backend.h "FP8 linear", the activation
// half), shared by every kernel that produces E4M3 activations: the quantize kernel
// (fp8_quantize.cu) and the GEMV's prologue (fp8_gemv.cu). Bit-exact with
// fp8_cpu::quantize_row: float32 amax, s = amax / 448 with IEEE division (1 for amax == 0,
// amax clamped to ub when ub > 0), codes e4m3(x / s) with IEEE division, round to nearest
// even and saturation (__NV_SATFINITE). Included by .cu files only.
#pragma once
#include <cuda_fp8.h>

#include <cstdint>

namespace seam::cuda {

__device__ __forceinline__ uint8_t fp8_encode(float v) {
  return uint8_t(__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3));
}

// The dynamic scale of a group from its float32 amax (already reduced).
__device__ __forceinline__ float fp8_act_scale(float amax, float ub) {
  if (ub > 0.f) amax = fminf(amax, ub);
  return amax > 0.f ? __fdiv_rn(amax, 448.f) : 1.f;
}

// The code of one activation under scale s.
__device__ __forceinline__ uint8_t fp8_act_code(float x, float s) { return fp8_encode(__fdiv_rn(x, s)); }

// E4M3 -> float, exact (every E4M3 value is a half).
__device__ __forceinline__ float fp8_decode(uint8_t v) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t(v), __NV_E4M3)));
}

}  // namespace seam::cuda
