// Device fill for the benchmarks: random, reproducible, never constant (constant data draws less
// power and runs faster than real weights, so a benchmark on it would flatter the kernel).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "core/random_fill.h"

namespace seam::bench {

// Uniform(-scale, scale): the stream `seed` of core/random_fill.h (as --load-format dummy's weights).
template <typename T>
__global__ void random_fill_kernel(T* p, int64_t n, uint64_t seed, float scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    p[i] = T(random_fill_value(seed, i, scale, 0.f));
}

}  // namespace seam::bench
