#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/rms_norm_add.h"

namespace seam::cuda {

namespace {

// One block per row, two passes over x (sum of squares, then normalise and add); each thread
// touches only its own elements of residual. V elements per access (16-byte vectors when aligned).
template <typename T, int V>
__global__ void rms_norm_add_kernel(T* residual, int64_t r_stride, const T* x, int64_t x_stride, const T* weight, int d,
                                    float eps) {
  pdl_begin();
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x;
  const T* xr = x + row * x_stride;
  T* rr = residual + row * r_stride;
  float ss = 0.f;
  for (int j = threadIdx.x * V; j < d; j += blockDim.x * V) {
    float v[V];
    if constexpr (V == 1)
      v[0] = to_float(xr[j]);
    else
      load_vec<T>(xr + j, v);
#pragma unroll
    for (int i = 0; i < V; ++i) ss += v[i] * v[i];
  }
  ss = block_sum(ss, scratch);
  const float scale = 1.f / sqrtf(ss / float(d) + eps);
  for (int j = threadIdx.x * V; j < d; j += blockDim.x * V) {
    float v[V], w[V], r[V];
    if constexpr (V == 1) {
      v[0] = to_float(xr[j]);
      w[0] = to_float(weight[j]);
      r[0] = to_float(rr[j]);
    } else {
      load_vec<T>(xr + j, v);
      load_vec<T>(weight + j, w);
      load_vec<T>(rr + j, r);
    }
#pragma unroll
    for (int i = 0; i < V; ++i) r[i] += v[i] * scale * w[i];
    if constexpr (V == 1)
      rr[j] = from_float<T>(r[0]);
    else
      store_vec<T>(rr + j, r);
  }
}

template <typename T>
void launch_typed(const Tensor& residual, const Tensor& x, const Tensor& weight, float eps, cudaStream_t stream) {
  const int d = int(x.size(1));
  const bool vec = rows_vectorizable(residual, d) && rows_vectorizable(x, d) && aligned16(weight.data);
  if (vec)
    launch_kernel(rms_norm_add_kernel<T, kVec<T>>, unsigned(x.size(0)), 256, 0, stream, residual.ptr<T>(),
                  residual.stride[0], x.ptr<T>(), x.stride[0], weight.ptr<T>(), d, eps);
  else
    launch_kernel(rms_norm_add_kernel<T, 1>, unsigned(x.size(0)), 256, 0, stream, residual.ptr<T>(), residual.stride[0],
                  x.ptr<T>(), x.stride[0], weight.ptr<T>(), d, eps);
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_rms_norm_add(const Tensor& residual, const Tensor& x, const Tensor& weight, float eps,
                         cudaStream_t stream) {
  if (x.size(0) == 0) return;
  SEAM_DISPATCH_FLOAT_TYPES(x.dtype, T, "rms_norm_add", [&] { launch_typed<T>(residual, x, weight, eps, stream); });
}

}  // namespace seam::cuda
