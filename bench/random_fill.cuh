// Device fill for the benchmarks: random, reproducible, never constant (constant data draws less
// power and runs faster than real weights, so a benchmark on it would flatter the kernel).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace seam::bench {

// Uniform(-scale, scale) from a hash (splitmix64) of (seed, index).
template <typename T>
__global__ void random_fill_kernel(T* p, int64_t n, uint64_t seed, float scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    uint64_t x = seed ^ (uint64_t(i) * 0x9e3779b97f4a7c15ull);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    const float u = float(x >> 40) * (1.f / 16777216.f) * 2.f - 1.f;
    p[i] = T(u * scale);
  }
}

}  // namespace seam::bench
