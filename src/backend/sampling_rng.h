// The random draw of sampling, shared by the CPU and CUDA backends so that a
// request's draws depend only on its seed and token index, never on the batch.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define SEAM_HD __host__ __device__
#else
#define SEAM_HD
#endif

namespace seam {

SEAM_HD inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) for (seed, step).
SEAM_HD inline double sampling_uniform(uint64_t seed, uint32_t step) {
  uint64_t r = splitmix64(seed ^ splitmix64(0x5ea3ull + step));
  return double(r >> 11) * (1.0 / 9007199254740992.0);
}

}  // namespace seam
