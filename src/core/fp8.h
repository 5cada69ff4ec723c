// FP8 E4M3 (the "E4M3FN" of the OCP spec, torch.float8_e4m3fn, CUDA __nv_fp8_e4m3): 1 sign,
// 4 exponent (bias 7) and 3 mantissa bits, no infinities, NaN only at 0x7f / 0xff, largest
// finite magnitude 448, subnormals m * 2^-9. The scalar codec every FP8 path is defined by:
// the CPU reference decodes and encodes with these, and the CUDA kernels must agree bit for
// bit (their encode is __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace seam {

constexpr float kFp8E4m3Max = 448.f;

// Exact decode of one E4M3FN byte.
inline float fp8_e4m3_to_f32(uint8_t v) {
  const uint32_t sign = uint32_t(v & 0x80) << 24;
  const uint32_t exp = (v >> 3) & 0xf, mant = v & 0x7;
  float mag;
  if (exp == 0xf && mant == 0x7) {
    mag = NAN;
  } else if (exp == 0) {
    mag = float(mant) * 0x1p-9f;  // subnormal (and zero)
  } else {
    uint32_t bits = (exp + 127 - 7) << 23 | mant << 20;
    std::memcpy(&mag, &bits, 4);
  }
  uint32_t bits;
  std::memcpy(&bits, &mag, 4);
  bits |= sign;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round to nearest, ties to even, saturating: |x| beyond 448 (infinity included) becomes
// +-448; NaN becomes 0x7f (0xff when negative). -0 keeps its sign.
inline uint8_t f32_to_fp8_e4m3(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint8_t sign = uint8_t((bits >> 24) & 0x80);
  const uint32_t abs_bits = bits & 0x7fffffff;
  if (abs_bits > 0x7f800000) return uint8_t(sign | 0x7f);
  float a;
  std::memcpy(&a, &abs_bits, 4);
  if (a >= kFp8E4m3Max) return uint8_t(sign | 0x7e);
  // Smallest normal is 2^-6; below it the grid is uniform with step 2^-9.
  if (a < 0x1p-6f) {
    // a * 2^9 is exact in float; nearbyint rounds half to even in the default mode.
    const float m = std::nearbyint(a * 512.f);
    return uint8_t(sign | uint8_t(m));  // m == 8 is the smallest normal (exp 1, mant 0): same code
  }
  // Normal: keep 3 of the 23 mantissa bits, rounding the 20 dropped bits half to even. A
  // carry into the exponent is the correct next binade; below 448 the result is at most 448
  // (0x7e), so the clamp only guards the invariant.
  const uint32_t e = (abs_bits >> 23) - 127 + 7;  // 1..15
  uint32_t m = abs_bits & 0x7fffff;
  uint32_t q = (e << 3) | (m >> 20);
  const uint32_t rem = m & 0xfffff, half = 0x80000;
  if (rem > half || (rem == half && (q & 1))) ++q;
  if (q > 0x7e) q = 0x7e;  // 464 and above would round to NaN's code: saturate
  return uint8_t(sign | q);
}

inline float fp8_e4m3_round(float f) { return fp8_e4m3_to_f32(f32_to_fp8_e4m3(f)); }

// The per-channel weight quantization of --quantization fp8, one float32 matrix [n_out, n_in]:
// scale[o] = amax(row o) / 448 (1 for an all-zero row), codes[o][k] = e4m3(w[o][k] / scale[o]),
// both divisions IEEE float32. Backend::quantize_fp8_per_channel is defined by it (CUDA's kernel
// is the activation quantizer's per-token math, cuda/fp8_act.cuh: the same bits).
inline void quantize_fp8_per_channel(const float* w, int64_t n_out, int64_t n_in, uint8_t* codes, float* scales) {
  for (int64_t o = 0; o < n_out; ++o) {
    const float* row = w + o * n_in;
    float amax = 0.f;
    for (int64_t k = 0; k < n_in; ++k) amax = std::fmax(amax, std::fabs(row[k]));
    const float s = amax > 0.f ? amax / kFp8E4m3Max : 1.f;
    scales[o] = s;
    for (int64_t k = 0; k < n_in; ++k) codes[o * n_in + k] = f32_to_fp8_e4m3(row[k] / s);
  }
}

}  // namespace seam
