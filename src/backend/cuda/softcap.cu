#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/softcap.h"

namespace seam::cuda {

namespace {

// Grid-stride over (row, element); tanhf (not the approximate SFU tanh): the capped logits
// feed sampling and logprobs, which the CPU reference checks to float32 rounding.
__global__ void softcap_kernel(float* x, int64_t stride, int64_t n_rows, int d, float cap) {
  pdl_begin();
  const float inv = 1.f / cap;
  const int64_t n = n_rows * d;
  for (int64_t it = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; it < n; it += int64_t(gridDim.x) * blockDim.x) {
    float* e = x + (it / d) * stride + it % d;
    *e = cap * tanhf(*e * inv);
  }
}

}  // namespace

void launch_softcap(const Tensor& x, float cap, cudaStream_t stream) {
  const int64_t n = x.size(0) * x.size(1);
  if (n == 0) return;
  const unsigned blocks = unsigned(std::min<int64_t>(div_up(n, 256), 132 * 16));
  launch_kernel(softcap_kernel, blocks, 256, 0, stream, x.ptr<float>(), x.stride[0], x.size(0), int(x.size(1)), cap);
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace seam::cuda
