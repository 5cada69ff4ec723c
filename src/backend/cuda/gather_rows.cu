#include "backend/cuda/gather_rows.h"

#include "backend/cuda/cuda_common.cuh"

namespace seam::cuda {

namespace {
// One block per output row; U is the copy granule (uint4 when 16-byte aligned, else one element).
template <typename U>
__global__ void gather_rows_kernel(U* out, int64_t out_stride, const U* x, int64_t x_stride, int64_t n_rows,
                                   const int32_t* idx, int64_t width) {
  pdl_begin();
  const int64_t i = blockIdx.x;
  int64_t r = idx[i];
  if (r < 0 || r >= n_rows) r = 0;
  const U* src = x + r * x_stride;
  U* dst = out + i * out_stride;
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x) dst[j] = src[j];
}

template <typename U>
void launch_units(const Tensor& out, const Tensor& x, const Tensor& idx, int64_t unit_elems, cudaStream_t stream) {
  const int64_t width = x.size(1) / unit_elems;
  const int threads = int(std::min<int64_t>(256, (width + 31) / 32 * 32));
  launch_kernel(gather_rows_kernel<U>, unsigned(out.size(0)), threads, 0, stream, out.ptr<U>(),
                out.stride[0] / unit_elems, x.ptr<U>(), x.stride[0] / unit_elems, x.size(0), idx.ptr<int32_t>(), width);
  SEAM_CUDA_CHECK_LAUNCH();
}
}  // namespace

void launch_gather_rows(const Tensor& out, const Tensor& x, const Tensor& idx, cudaStream_t stream) {
  if (out.size(0) == 0) return;
  const int64_t esize = int64_t(dtype_size(x.dtype));
  if (rows_vectorizable(out, x.size(1)) && rows_vectorizable(x, x.size(1)))
    return launch_units<uint4>(out, x, idx, 16 / esize, stream);
  if (esize == 4) return launch_units<uint32_t>(out, x, idx, 1, stream);
  return launch_units<uint16_t>(out, x, idx, 1, stream);
}

}  // namespace seam::cuda
