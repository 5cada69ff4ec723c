// Element types and the scalar conversions the CPU side needs (bf16/f16 <-> f32).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace seam {

// fp8_e4m3: FP8 E4M3FN weights (core/fp8.h); only quantized linear layers store it.
enum class DType : uint8_t { f32, f16, bf16, i32, i64, fp8_e4m3 };

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::fp8_e4m3: return 1;
  }
  return 0;
}

std::string dtype_name(DType t);

inline float bf16_to_f32(uint16_t v) {
  uint32_t bits = uint32_t(v) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round-to-nearest-even, NaN kept quiet.
inline uint16_t f32_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffff) > 0x7f800000) return uint16_t((bits >> 16) | 0x40);
  uint32_t rounding = 0x7fff + ((bits >> 16) & 1);
  return uint16_t((bits + rounding) >> 16);
}

float f16_to_f32(uint16_t v);
uint16_t f32_to_f16(float f);

// Converts n elements of `src` (type `t`) to float32.
void convert_to_f32(const void* src, DType t, float* dst, size_t n);
// Converts n float32 values to `t` (f32, f16, bf16, or fp8_e4m3: unscaled, rounded and
// saturated as core/fp8.h).
void convert_from_f32(const float* src, DType t, void* dst, size_t n);

}  // namespace seam
