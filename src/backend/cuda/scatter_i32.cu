#include "backend/cuda/scatter_i32.h"

#include "backend/cuda/cuda_common.cuh"

namespace seam::cuda {

namespace {
__global__ void scatter_i32_kernel(int32_t* dst, int64_t n_dst, const int2* pairs, int64_t n) {
  pdl_begin();
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int2 p = pairs[i];
    if (p.x >= 0 && p.x < n_dst) dst[p.x] = p.y;
  }
}
}  // namespace

void launch_scatter_i32(const Tensor& dst, const Tensor& pairs, cudaStream_t stream) {
  const int64_t n = pairs.size(0);
  if (n == 0) return;
  const int threads = 256;
  const unsigned blocks = unsigned(std::min<int64_t>((n + threads - 1) / threads, 1024));
  launch_kernel(scatter_i32_kernel, blocks, threads, 0, stream, dst.ptr<int32_t>(), dst.numel(),
                static_cast<const int2*>(pairs.data), n);
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace seam::cuda
