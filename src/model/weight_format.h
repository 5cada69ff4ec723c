// WeightFormat: how a linear layer stores its weight on the device. Today every format is
// dense (one dtype, HF layout [out, in]) and the backend's GEMM/GEMV dispatches on that
// dtype. A quantized format (FP8 per-tensor/per-channel/block, int4) adds a value here,
// its storage (scales) and its GEMM in Linear; the model and the runners stay as they are.
#pragma once
#include "core/dtype.h"
#include "core/error.h"

namespace seam {

// fp8_e4m3: E4M3 weights with float32 scales (Linear::fp8(), backend.h "FP8 linear").
enum class WeightFormat : uint8_t { f32, f16, bf16, fp8_e4m3 };

inline const char* weight_format_name(WeightFormat f) {
  switch (f) {
    case WeightFormat::f32: return "f32";
    case WeightFormat::f16: return "f16";
    case WeightFormat::bf16: return "bf16";
    case WeightFormat::fp8_e4m3: return "fp8_e4m3";
  }
  return "?";
}

// The dense format that stores weights in `t` (the compute dtype today).
inline WeightFormat dense_weight_format(DType t) {
  switch (t) {
    case DType::f32: return WeightFormat::f32;
    case DType::f16: return WeightFormat::f16;
    case DType::bf16: return WeightFormat::bf16;
    default: break;
  }
  throw Error("no dense weight format stores " + dtype_name(t));
}

// The element type of a dense format's weight.
inline DType weight_format_dtype(WeightFormat f) {
  switch (f) {
    case WeightFormat::f32: return DType::f32;
    case WeightFormat::f16: return DType::f16;
    case WeightFormat::bf16: return DType::bf16;
    case WeightFormat::fp8_e4m3: return DType::fp8_e4m3;
  }
  return DType::f32;
}

}  // namespace seam
