// map_rows_inplace: x[r, j] = op(x[r, j]) over a row-strided [n, d] view, in place,
// for the element-wise ops that differ only in their formula (scale.cu, softcap.cu).
// The value is handed to `op` in float32 and rounded to T once.
#pragma once
#include <algorithm>

#include "backend/cuda/cuda_common.cuh"

namespace seam::cuda {

// Grid-stride over (row, element) items.
template <typename T, typename Op>
__global__ void map_rows_inplace_kernel(T* x, int64_t stride, int64_t n_rows, int d, Op op) {
  pdl_begin();
  const int64_t n = n_rows * d;
  for (int64_t it = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; it < n; it += int64_t(gridDim.x) * blockDim.x) {
    T* e = x + (it / d) * stride + it % d;
    *e = from_float<T>(op(to_float(*e)));
  }
}

// x [n, d] of element type T (the caller has checked the dtype), rows may be strided.
template <typename T, typename Op>
void map_rows_inplace(const Tensor& x, Op op, cudaStream_t stream) {
  const int64_t n = x.size(0) * x.size(1);
  if (n == 0) return;
  // At most 16 blocks of 256 per SM of an H100/H200 (132 SMs): the grid-stride loop covers the rest.
  const unsigned blocks = unsigned(std::min<int64_t>(div_up(n, 256), 132 * 16));
  launch_kernel(map_rows_inplace_kernel<T, Op>, blocks, 256, 0, stream, x.ptr<T>(), x.stride[0], x.size(0),
                int(x.size(1)), op);
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace seam::cuda
