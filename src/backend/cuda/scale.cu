#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/scale.h"

namespace seam::cuda {

namespace {

// Grid-stride over (row, element) of a row-strided [n, d] view.
template <typename T>
__global__ void scale_kernel(T* x, int64_t stride, int64_t n_rows, int d, float s) {
  pdl_begin();
  const int64_t n = n_rows * d;
  for (int64_t it = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; it < n; it += int64_t(gridDim.x) * blockDim.x) {
    T* e = x + (it / d) * stride + it % d;
    *e = from_float<T>(to_float(*e) * s);
  }
}

}  // namespace

void launch_scale(const Tensor& x, float s, cudaStream_t stream) {
  const int64_t n = x.size(0) * x.size(1);
  if (n == 0) return;
  const unsigned blocks = unsigned(std::min<int64_t>(div_up(n, 256), 132 * 16));
  SEAM_DISPATCH_FLOAT_TYPES(x.dtype, T, "scale", [&] {
    launch_kernel(scale_kernel<T>, blocks, 256, 0, stream, x.ptr<T>(), x.stride[0], x.size(0), int(x.size(1)), s);
  });
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace seam::cuda
