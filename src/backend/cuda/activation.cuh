// The gated-MLP activations in float32, shared by the gated_act kernel and the GEMV epilogue.
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"

namespace seam::cuda {

__device__ __forceinline__ float silu_f32(float g) { return g / (1.f + expf(-g)); }
// PyTorch gelu(x, approximate="tanh"): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
__device__ __forceinline__ float gelu_tanh_f32(float g) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  return 0.5f * g * (1.f + tanhf(kSqrt2OverPi * (g + 0.044715f * g * g * g)));
}
template <Activation A>
__device__ __forceinline__ float activate(float g) {
  if constexpr (A == Activation::silu)
    return silu_f32(g);
  else
    return gelu_tanh_f32(g);
}

}  // namespace seam::cuda
