// fill: every element of a contiguous tensor set to one value (f32/f16/bf16/i32/i64), or to a
// reproducible random stream (--load-format dummy's weights).
#pragma once
#include <cuda_runtime.h>

#include "core/random_fill.h"
#include "core/tensor.h"

namespace seam::cuda {
void launch_fill(const Tensor& t, float value, cudaStream_t stream);
// t (f32/f16/bf16, contiguous) = f's stream (core/random_fill.h), rounded to nearest even.
void launch_fill_random(const Tensor& t, const RandomFill& f, cudaStream_t stream);
}
