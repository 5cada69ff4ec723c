#include "backend/cuda/moe_combine.h"

#include <type_traits>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/moe_common.cuh"

namespace seam::cuda {

namespace {

// 8 consecutive expert outputs from 16-bit rows (one 16-byte load) or float32 ones (two).
template <typename T>
__device__ __forceinline__ void load8(const T* p, float (&f)[8]) {
  unpack8<T>(*reinterpret_cast<const uint4*>(p), f);
}
template <>
__device__ __forceinline__ void load8<float>(const float* p, float (&f)[8]) {
  const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
  f[0] = a.x, f[1] = a.y, f[2] = a.z, f[3] = a.w, f[4] = b.x, f[5] = b.y, f[6] = b.z, f[7] = b.w;
}

// TE: the expert outputs' type (T, or float32 unrounded).
template <typename T, typename TE>
__global__ void moe_combine_vec_kernel(T* out, int64_t out_stride, const TE* expert_out, const float* weights,
                                       int64_t n, int k, int hidden) {
  pdl_begin();
  const int n_vec = hidden / 8;
  const int64_t n_items = n * n_vec;
  for (int64_t it = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; it < n_items;
       it += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = it / n_vec;
    const int v = int(it % n_vec);
    float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    for (int j = 0; j < k; ++j) {
      const float w = weights[i * k + j];
      float y[8];
      load8<TE>(expert_out + (i * k + j) * hidden + v * 8, y);
#pragma unroll
      for (int c = 0; c < 8; ++c) acc[c] += w * y[c];
    }
    T* o = out + i * out_stride + v * 8;
#pragma unroll
    for (int c = 0; c < 8; ++c) o[c] = from_float<T>(to_float(o[c]) + acc[c]);
  }
}

}  // namespace

void launch_moe_combine(const Tensor& out, const Tensor& expert_out, const Tensor& topk_weights, cudaStream_t stream) {
  const int64_t n = out.size(0);
  const int hidden = int(out.size(1)), k = int(topk_weights.size(1));
  SEAM_ASSERT(hidden % 8 == 0 && aligned16(expert_out.data) &&
              (expert_out.dtype == out.dtype || expert_out.dtype == DType::f32) && expert_out.size(1) == hidden &&
              expert_out.size(0) >= n * k);
  if (n == 0) return;
  const unsigned blocks = unsigned(std::min<int64_t>(div_up(n * (hidden / 8), 256), 132 * 8));
  auto go = [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    if (expert_out.dtype == DType::f32)
      launch_kernel(moe_combine_vec_kernel<T, float>, dim3(blocks), dim3(256), 0, stream, out.ptr<T>(), out.stride[0],
                    static_cast<const float*>(expert_out.ptr<float>()), topk_weights.ptr<float>(), n, k, hidden);
    else
      launch_kernel(moe_combine_vec_kernel<T, T>, dim3(blocks), dim3(256), 0, stream, out.ptr<T>(), out.stride[0],
                    static_cast<const T*>(expert_out.ptr<T>()), topk_weights.ptr<float>(), n, k, hidden);
  };
  if (out.dtype == DType::bf16) go(static_cast<__nv_bfloat16*>(nullptr));
  else go(static_cast<__half*>(nullptr));
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace seam::cuda
