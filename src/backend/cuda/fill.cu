#include "backend/cuda/fill.h"

#include "backend/cuda/cuda_common.cuh"

namespace seam::cuda {

namespace {
template <typename T>
__global__ void fill_kernel(T* p, int64_t n, T value) {
  pdl_begin();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    p[i] = value;
}

template <typename T>
void launch_typed(void* p, int64_t n, T value, cudaStream_t stream) {
  if (n == 0) return;
  const unsigned blocks = unsigned(std::min<int64_t>(div_up(n, 256), 4096));
  launch_kernel(fill_kernel<T>, blocks, 256, 0, stream, static_cast<T*>(p), n, value);
  SEAM_CUDA_CHECK_LAUNCH();
}

template <typename T>
__global__ void fill_random_kernel(T* p, int64_t n, RandomFill f) {
  pdl_begin();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    p[i] = from_float<T>(random_fill_value(f.seed, f.first + i, f.scale, f.offset));  // round to nearest even
}

template <typename T>
void launch_random_typed(void* p, int64_t n, const RandomFill& f, cudaStream_t stream) {
  if (n == 0) return;
  const unsigned blocks = unsigned(std::min<int64_t>(div_up(n, 256), 8192));
  launch_kernel(fill_random_kernel<T>, blocks, 256, 0, stream, static_cast<T*>(p), n, f);
  SEAM_CUDA_CHECK_LAUNCH();
}
}  // namespace

void launch_fill_random(const Tensor& t, const RandomFill& f, cudaStream_t stream) {
  switch (t.dtype) {
    case DType::f32: return launch_random_typed<float>(t.data, t.numel(), f, stream);
    case DType::f16: return launch_random_typed<__half>(t.data, t.numel(), f, stream);
    case DType::bf16: return launch_random_typed<__nv_bfloat16>(t.data, t.numel(), f, stream);
    default: throw Error(detail::concat("fill_random: ", dtype_name(t.dtype), " is not a float dtype"));
  }
}

void launch_fill(const Tensor& t, float value, cudaStream_t stream) {
  const int64_t n = t.numel();
  switch (t.dtype) {
    case DType::f32: return launch_typed<float>(t.data, n, value, stream);
    case DType::f16: return launch_typed<__half>(t.data, n, __float2half_rn(value), stream);
    case DType::bf16: return launch_typed<__nv_bfloat16>(t.data, n, __float2bfloat16_rn(value), stream);
    case DType::i32: return launch_typed<int32_t>(t.data, n, int32_t(value), stream);
    case DType::i64: return launch_typed<int64_t>(t.data, n, int64_t(value), stream);
  }
}

}  // namespace seam::cuda
