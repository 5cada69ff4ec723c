// fill: every element of a contiguous tensor set to one value (f32/f16/bf16/i32/i64).
#pragma once
#include <cuda_runtime.h>

#include "core/tensor.h"

namespace seam::cuda {
void launch_fill(const Tensor& t, float value, cudaStream_t stream);
}
