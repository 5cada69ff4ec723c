#include "backend/cuda/moe_shared_expert_add.h"

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/moe_common.cuh"

namespace seam::cuda {

namespace {

template <typename T>
__global__ void moe_shared_expert_add_kernel(T* out, int64_t out_stride, const T* y, int64_t y_stride, const T* gate,
                                             int64_t gate_stride, int64_t n, int hidden) {
  pdl_begin();
  add_to_rows(out, out_stride, n, hidden, [&](int64_t r, int h) {
    const float s = 1.f / (1.f + expf(-to_float(gate[r * gate_stride])));
    return s * to_float(y[r * y_stride + h]);
  });
}

}  // namespace

void launch_moe_shared_expert_add(const Tensor& out, const Tensor& y, const Tensor& gate, cudaStream_t stream) {
  const int64_t n = y.size(0);
  const int hidden = int(y.size(1));
  if (n == 0 || hidden == 0) return;
  const unsigned blocks = unsigned(std::min<int64_t>(div_up(n * hidden, 256), 132 * 16));
  SEAM_DISPATCH_FLOAT_TYPES(y.dtype, T, "moe_shared_expert_add", [&] {
    launch_kernel(moe_shared_expert_add_kernel<T>, dim3(blocks), dim3(256), 0, stream, out.ptr<T>(), out.stride[0],
                  y.ptr<T>(), y.stride[0], gate.ptr<T>(), gate.stride[0], n, hidden);
  });
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace seam::cuda
