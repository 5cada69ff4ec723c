// RandomFill: a reproducible pseudo-random tensor, described instead of stored. `--load-format
// dummy` (model/checkpoint.h: Checkpoint::dummy) gives every weight one, and the backend writes
// it on the device (Backend::fill_random) with no file and no host copy; code that needs the
// values on the host (load-time folds, online FP8 quantization) computes the same ones there.
//
// Element i of the stream (seed) is offset + scale * u_i, u_i uniform in [-1, 1) from a
// splitmix64 hash of (seed, i). The value is one correctly rounded fmaf of exact operands
// (u_i is a 24-bit integer times 2^-23, minus 1: exact in float), so the host and every device
// compute the same float32 bits; the conversion to the weight's dtype rounds to nearest even on
// both. A row view of a random tensor (HostTensor::rows) keeps the stream and moves `first`.
#pragma once
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define SEAM_HOST_DEVICE __host__ __device__
#else
#define SEAM_HOST_DEVICE
#endif

namespace seam {

struct RandomFill {
  uint64_t seed = 0;
  int64_t first = 0;  // the stream index of the tensor's element 0
  float scale = 0.f;  // values in offset ± scale
  float offset = 0.f;
};

SEAM_HOST_DEVICE inline float random_fill_value(uint64_t seed, int64_t i, float scale, float offset) {
  uint64_t x = seed ^ (uint64_t(i) * 0x9e3779b97f4a7c15ull);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  const float u = float(x >> 40) * (1.f / 8388608.f) - 1.f;  // [-1, 1), exact
  return fmaf(u, scale, offset);
}

// out[j] = element first + j of the stream, j < n (float32, on the host).
inline void random_fill_host(const RandomFill& f, float* out, int64_t n) {
  for (int64_t j = 0; j < n; ++j) out[j] = random_fill_value(f.seed, f.first + j, f.scale, f.offset);
}

}  // namespace seam
