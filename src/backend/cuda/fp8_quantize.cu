#include "backend/cuda/fp8_quantize.h"

#include <cuda_fp8.h>

#include "backend/cuda/cuda_common.cuh"

namespace seam::cuda {

namespace {

constexpr int kThreads = 128;

__device__ __forceinline__ uint8_t to_e4m3(float v) {
  return uint8_t(__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3));
}

// One block per (row, group): amax over the group by a block reduction, then the codes.
template <typename T>
__global__ void fp8_quantize_kernel(uint8_t* codes, float* scales, const T* x, int64_t x_stride, int64_t n_in,
                                    int64_t width, int n_groups, int act, const float* input_scale, float ub) {
  pdl_begin();
  const int64_t row = blockIdx.y;
  const int g = int(blockIdx.x);
  const int64_t begin = int64_t(g) * width, end = min(n_in, begin + width);
  const T* xr = x + row * x_stride;
  __shared__ float s_red[kThreads / 32];
  __shared__ float s_scale;
  float s;
  if (act == int(Fp8ActScheme::static_per_tensor)) {
    s = *input_scale;
  } else {
    float amax = 0.f;
    for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x) amax = fmaxf(amax, fabsf(to_float(xr[k])));
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    if ((threadIdx.x & 31) == 0) s_red[threadIdx.x / 32] = amax;
    __syncthreads();
    if (threadIdx.x == 0) {
      float a = 0.f;
      for (int i = 0; i < kThreads / 32; ++i) a = fmaxf(a, s_red[i]);
      if (ub > 0.f) a = fminf(a, ub);
      s_scale = a > 0.f ? __fdiv_rn(a, 448.f) : 1.f;
    }
    __syncthreads();
    s = s_scale;
  }
  if (threadIdx.x == 0) scales[row * n_groups + g] = s;
  for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x) codes[row * n_in + k] = to_e4m3(__fdiv_rn(to_float(xr[k]), s));
}

}  // namespace

void launch_fp8_quantize_act(const Tensor& codes, const Tensor& scales, const Tensor& x, const Fp8Weight& w,
                             cudaStream_t stream) {
  const int64_t n = x.size(0), n_in = x.size(1);
  if (n == 0 || n_in == 0) return;
  const bool grouped = w.act == Fp8ActScheme::dynamic_group128;
  const int64_t width = grouped ? kFp8Group : n_in;
  const int n_groups = int(div_up(n_in, width));
  SEAM_ASSERT(codes.dtype == DType::fp8_e4m3 && codes.contiguous() && codes.numel() >= n * n_in);
  SEAM_ASSERT(scales.dtype == DType::f32 && scales.contiguous() && scales.numel() >= n * n_groups);
  SEAM_ASSERT(n <= 65535, "fp8 quantize: ", n, " rows exceed the grid's y limit");
  const float* input_scale = w.act == Fp8ActScheme::static_per_tensor ? w.input_scale.ptr<float>() : nullptr;
  SEAM_DISPATCH_FLOAT_TYPES(x.dtype, T, "fp8 quantize", [&] {
    launch_kernel(fp8_quantize_kernel<T>, dim3(unsigned(n_groups), unsigned(n)), kThreads, 0, stream,
                  codes.ptr<uint8_t>(), scales.ptr<float>(), x.ptr<const T>(), x.stride[0], n_in, width, n_groups,
                  int(w.act), input_scale, w.act_amax_ub);
    SEAM_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace seam::cuda
