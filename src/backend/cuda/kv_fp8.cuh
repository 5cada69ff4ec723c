// FP8 E4M3 KV cache codes on the device: the encode of store_kv / rope_store_kv and the
// decodes of the attention kernels (KvScales, backend.h; the codec is core/fp8.h's).
//
// Encode: __nv_cvt_float_to_fp8(x / scale, __NV_SATFINITE, __NV_E4M3), round to nearest even,
// saturating at +-448: bit for bit core/fp8.h's f32_to_fp8_e4m3 for every finite or infinite
// x (the division is IEEE: the build does not use fast math). A NaN becomes a NaN code.
//
// Decode: every E4M3 value is exact in bf16 and in f16 (3 mantissa bits, exponents 2^-9 ..
// 2^8), so the tensor-core kernels turn a tile of codes into a bf16/f16 tile of the very same
// values and run their MMAs unchanged; the scales stay out of the tile (k_scale folded into
// the softmax scale, v_scale into the output's normalisation: make_attention_params), so the
// tile is exact and only float rounding separates a kernel from the CPU backend's
// code * scale.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <type_traits>

#include "backend/cuda/cuda_common.cuh"

namespace seam::cuda {

// The element type of an FP8 cache in the kernels' templates (KV = T for a float cache).
using Fp8 = uint8_t;

template <typename KV>
constexpr bool kIsFp8 = std::is_same_v<KV, Fp8>;

__device__ __forceinline__ uint8_t e4m3_encode(float x) {
  return uint8_t(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
}

__device__ __forceinline__ float e4m3_to_float(uint8_t c) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t(c), __NV_E4M3)));
}

// Two codes (the low byte first) as a packed pair of T, exactly.
template <typename T>
__device__ __forceinline__ uint32_t e4m3x2_to(uint32_t two);
template <>
__device__ __forceinline__ uint32_t e4m3x2_to<__half>(uint32_t two) {
  __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(two & 0xffffu), __NV_E4M3);
  return uint32_t(h.x) | uint32_t(h.y) << 16;
}
template <>
__device__ __forceinline__ uint32_t e4m3x2_to<__nv_bfloat16>(uint32_t two) {
  // Through f16 and float, every step exact (the hardware's cvt.f16x2.e4m3x2 on sm_89+).
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(two & 0xffffu), __NV_E4M3);
  const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&h));
  const __nv_bfloat162 v = __float22bfloat162_rn(f);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// Eight codes (8 bytes) as eight T (16 bytes).
template <typename T>
__device__ __forceinline__ uint4 e4m3x8_to(uint2 codes) {
  uint4 r;
  r.x = e4m3x2_to<T>(codes.x);
  r.y = e4m3x2_to<T>(codes.x >> 16);
  r.z = e4m3x2_to<T>(codes.y);
  r.w = e4m3x2_to<T>(codes.y >> 16);
  return r;
}

// Four codes (a 32-bit word, byte i = code i) as two packed pairs of T by bit arithmetic, without
// the conversion unit: p02 = (code 0, code 2), p13 = (code 1, code 3) (the low half first; the
// pairing is what two shifts of the word give, and the register-fragment decode kernel permutes
// its dims to match, attention_decode.cu). Why: cvt.f16x2.e4m3x2 and, for bf16, the float round
// trip after it run on the SM's conversion pipe (a quarter of the FMA rate), and a tile of FP8 KV
// needs ~4 of them a pair of codes; here a pair costs ~2 integer ops and half an fma.
// How: a code's 7 magnitude bits (eeee mmm) moved to the top of T's exponent / mantissa fields
// give a T whose exponent field is the code's e (T's subnormal for e = 0, as the code's own
// subnormals), so value(T) = value(code) * 2^(bias(T) - 7); one fma by 2^(7 - bias(T)) (exact:
// every E4M3 value is a normal T) restores it, and keeps a zero zero. Shift: bf16 8 exponent
// bits → 4; f16 5 → 1. The fma is the plain PTX one (no .ftz: T's subnormal inputs are kept).
// Every finite code decodes to e4m3x2_to's value (cuda_fp8_kv_test: all 256 codes, both dtypes);
// a NaN code (0x7f / 0xff) decodes to +-480 instead of NaN (a cache holds one only if NaN was stored).
template <typename T>
__device__ __forceinline__ void e4m3x4_to_pairs(uint32_t x, uint32_t& p02, uint32_t& p13) {
  constexpr int kShift = std::is_same_v<T, __half> ? 1 : 4;
  const uint32_t x8 = x << 8;
  const uint32_t r02 = (x8 & 0x80008000u) | ((x8 & 0x7f007f00u) >> kShift);
  const uint32_t r13 = (x & 0x80008000u) | ((x & 0x7f007f00u) >> kShift);
  if constexpr (std::is_same_v<T, __half>) {
    // 2^8 (0x5c00) in each half; -0 addend: x * 2^8 + -0 is x * 2^8 for either zero.
    asm("fma.rn.f16x2 %0, %1, %2, %3;\n" : "=r"(p02) : "r"(r02), "r"(0x5c005c00u), "r"(0x80008000u));
    asm("fma.rn.f16x2 %0, %1, %2, %3;\n" : "=r"(p13) : "r"(r13), "r"(0x5c005c00u), "r"(0x80008000u));
  } else {
    // 2^120 (0x7b80) in each half.
    asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(p02) : "r"(r02), "r"(0x7b807b80u), "r"(0x80008000u));
    asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(p13) : "r"(r13), "r"(0x7b807b80u), "r"(0x80008000u));
  }
}

// An element of the cache as float: a float cache's value, or an FP8 code's (unscaled).
template <typename KV>
__device__ __forceinline__ float kv_to_float(KV x) {
  if constexpr (kIsFp8<KV>)
    return e4m3_to_float(x);
  else
    return to_float(x);
}

}  // namespace seam::cuda
