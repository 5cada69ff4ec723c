#include "backend/cuda/fp8_gemm.h"

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/fp8_act.cuh"

namespace seam::cuda {

namespace {

constexpr int kWarps = 8;

template <typename T>
__global__ void fp8_gemm_simt_kernel(T* out, int64_t out_stride, const uint8_t* xq, const float* xs, const uint8_t* wq,
                                     const float* ws, const T* bias, int64_t n_in, int64_t n_out, int w_scheme,
                                     int n_groups, int64_t width, int64_t n_rows, bool accumulate) {
  pdl_begin();
  const int lane = threadIdx.x & 31;
  const int64_t o = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;
  const int64_t i = blockIdx.y;
  if (o >= n_out) return;
  const uint8_t* xr = xq + i * n_in;
  const uint8_t* wr = wq + o * n_in;
  float y = 0.f;
  for (int g = 0; g < n_groups; ++g) {
    const int64_t begin = int64_t(g) * width, end = min(n_in, begin + width);
    float s = 0.f;
    for (int64_t k = begin + lane; k < end; k += 32) s += fp8_decode(xr[k]) * fp8_decode(wr[k]);
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    float scale;
    // xs is [n_groups, n_rows] (fp8_quantize.h).
    if (w_scheme == int(Fp8WeightScheme::per_tensor)) scale = xs[i] * ws[0];
    else if (w_scheme == int(Fp8WeightScheme::per_channel)) scale = xs[i] * ws[o];
    else scale = xs[g * n_rows + i] * ws[o * n_groups + g];
    y += scale * s;
  }
  if (lane == 0) {
    if (bias) y += to_float(bias[o]);
    T* dst = out + i * out_stride + o;
    *dst = from_float<T>(accumulate ? to_float(*dst) + y : y);
  }
}

}  // namespace

void launch_fp8_gemm_simt(const Tensor& out, const Tensor& codes, const Tensor& act_scales, const Fp8Weight& w,
                          const Tensor& bias, bool accumulate, cudaStream_t stream) {
  const int64_t n = out.size(0), n_out = w.w.size(0), n_in = w.w.size(1);
  if (n == 0 || n_out == 0) return;
  SEAM_ASSERT(n <= 65535, "fp8 gemm: ", n, " rows exceed the grid's y limit");
  const bool block = w.w_scheme == Fp8WeightScheme::block128;
  const int n_groups = block ? int(div_up(n_in, kFp8Group)) : 1;
  const int64_t width = block ? kFp8Group : n_in;
  SEAM_DISPATCH_FLOAT_TYPES(out.dtype, T, "fp8 gemm", [&] {
    launch_kernel(fp8_gemm_simt_kernel<T>, dim3(div_up(n_out, kWarps), unsigned(n)), kWarps * 32, 0, stream,
                  out.ptr<T>(), out.stride[0], codes.ptr<const uint8_t>(), act_scales.ptr<const float>(),
                  w.w.ptr<const uint8_t>(), w.w_scale.ptr<const float>(),
                  bias.defined() ? bias.ptr<const T>() : static_cast<const T*>(nullptr), n_in, n_out,
                  int(w.w_scheme), n_groups, width, n, accumulate);
    SEAM_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace seam::cuda
