#include "backend/cuda/bias_add.h"

#include "backend/cuda/cuda_common.cuh"

namespace seam::cuda {

namespace {
template <typename T, typename B>
__global__ void bias_add_kernel(T* out, int64_t stride, const B* bias, int64_t n, int64_t m) {
  pdl_begin();
  for (int64_t it = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; it < n * m; it += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = it / m, j = it % m;
    T* o = out + r * stride + j;
    *o = from_float<T>(to_float(*o) + to_float(bias[j]));
  }
}
}  // namespace

void launch_bias_add(const Tensor& out, const Tensor& bias, cudaStream_t stream) {
  const int64_t n = out.size(0), m = out.size(1);
  if (n == 0 || m == 0) return;
  const unsigned blocks = unsigned(std::min<int64_t>(div_up(n * m, 256), 132 * 16));
  SEAM_DISPATCH_FLOAT_TYPES(out.dtype, T, "bias_add", [&] {
    SEAM_DISPATCH_FLOAT_TYPES(bias.dtype, B, "bias_add bias", [&] {
      launch_kernel(bias_add_kernel<T, B>, blocks, 256, 0, stream, out.ptr<T>(), out.stride[0], bias.ptr<B>(), n, m);
    });
  });
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace seam::cuda
