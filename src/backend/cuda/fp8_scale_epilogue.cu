#include "backend/cuda/fp8_scale_epilogue.h"

#include "backend/cuda/cuda_common.cuh"

namespace seam::cuda {

namespace {

constexpr int kThreads = 256;

// One thread per output element, consecutive threads along o (coalesced sums and out rows).
template <typename T>
__global__ void fp8_scale_epilogue_kernel(T* out, int64_t out_stride, const float* sums, const float* xs,
                                          const float* ws, int64_t ws_step, const T* bias, int64_t n_out,
                                          bool accumulate) {
  pdl_begin();
  const int64_t i = blockIdx.y;
  const int64_t o = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (o >= n_out) return;
  float y = (xs[i] * ws[o * ws_step]) * sums[i * n_out + o];
  if (bias) y += to_float(bias[o]);
  T* dst = out + i * out_stride + o;
  *dst = from_float<T>(accumulate ? to_float(*dst) + y : y);
}

}  // namespace

void launch_fp8_scale_epilogue(const Tensor& out, const float* sums, const float* act_scales, const Fp8Weight& w,
                               const Tensor& bias, bool accumulate, cudaStream_t stream) {
  const int64_t n = out.size(0), n_out = out.size(1);
  if (n == 0 || n_out == 0) return;
  SEAM_ASSERT(n <= 65535, "fp8 scale epilogue: ", n, " rows exceed the grid's y limit");
  SEAM_ASSERT(w.w_scheme == Fp8WeightScheme::per_tensor || w.w_scheme == Fp8WeightScheme::per_channel,
              "fp8 scale epilogue: one scale per output channel or per tensor");
  const int64_t ws_step = w.w_scheme == Fp8WeightScheme::per_channel ? 1 : 0;
  SEAM_DISPATCH_FLOAT_TYPES(out.dtype, T, "fp8 scale epilogue", [&] {
    launch_kernel(fp8_scale_epilogue_kernel<T>, dim3(unsigned(div_up(n_out, kThreads)), unsigned(n)), kThreads, 0,
                  stream, out.ptr<T>(), out.stride[0], sums, act_scales, w.w_scale.ptr<const float>(), ws_step,
                  bias.defined() ? bias.ptr<const T>() : static_cast<const T*>(nullptr), n_out, accumulate);
    SEAM_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace seam::cuda
