// bias_add: out[r][j] += bias[j]; the fallback when cuBLASLt cannot fuse the bias.
#pragma once
#include <cuda_runtime.h>

#include "core/tensor.h"

namespace seam::cuda {
// out [n, m] (rows may be strided; f32/f16/bf16), bias [m] (f32/f16/bf16).
void launch_bias_add(const Tensor& out, const Tensor& bias, cudaStream_t stream);
}
