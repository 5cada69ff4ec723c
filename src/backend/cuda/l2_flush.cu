#include "backend/cuda/l2_flush.h"

#include <algorithm>
#include <cstdint>

#include "backend/cuda/cuda_check.h"

namespace seam::cuda {

namespace {
// Every 16-byte word is loaded; the XOR keeps the loads alive. The store fires only
// when the XOR of the whole thread's share equals a fixed 64-bit pattern: never in
// practice, and harmless if it did (the buffer is scratch).
__global__ void l2_flush_kernel(uint4* p, int64_t n) {
  uint32_t acc = 0;
#pragma unroll 4
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const uint4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u && threadIdx.x == 0x3ff) p[0].x = acc;
}
}  // namespace

void launch_l2_flush(void* buf, size_t bytes, cudaStream_t stream) {
  const int64_t n = int64_t(bytes / sizeof(uint4));
  if (n == 0) return;
  // Plain launch (no PDL attribute): the timed kernel must not overlap the flush.
  const unsigned blocks = unsigned(std::min<int64_t>((n + 255) / 256, 132 * 16));
  l2_flush_kernel<<<blocks, 256, 0, stream>>>(static_cast<uint4*>(buf), n);
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace seam::cuda
