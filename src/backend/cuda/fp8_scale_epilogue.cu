#include "backend/cuda/fp8_scale_epilogue.h"

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/fp8_scaled_output.cuh"

namespace seam::cuda {

namespace {

constexpr int kThreads = 256;

// One thread per output element (scaled_output: fp8_scaled_output.cuh), consecutive threads along o
// (coalesced sums and out rows).
template <typename T>
__global__ void fp8_scale_epilogue_kernel(T* out, int64_t out_stride, const float* sums, const float* xs,
                                          const float* ws, int64_t ws_step, const T* bias, int64_t n_out,
                                          bool accumulate) {
  pdl_begin();
  const int64_t i = blockIdx.y;
  const int64_t o = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (o >= n_out) return;
  T* dst = out + i * out_stride + o;
  *dst = scaled_output<T>(sums[i * n_out + o], xs[i], ws[o * ws_step], bias ? bias + o : nullptr,
                          accumulate ? dst : nullptr);
}

// Eight outputs a thread for 16-bit outputs: two 16-byte loads of sums, one 16-byte store
// (the kernel above, 2-byte stores, ran at ~1.3 TB/s on the H200: 835 µs a layer of the FP8
// prefill of 4,096 tokens). Same arithmetic per element.
template <typename T>
__global__ void fp8_scale_epilogue_vec_kernel(T* out, int64_t out_stride, const float* sums, const float* xs,
                                              const float* ws, int64_t ws_step, const T* bias, int64_t n_out,
                                              bool accumulate) {
  pdl_begin();
  const int64_t i = blockIdx.y;
  const int64_t o = (int64_t(blockIdx.x) * kThreads + threadIdx.x) * 8;
  if (o >= n_out) return;
  T* dst = out + i * out_stride + o;
  *reinterpret_cast<uint4*>(dst) = scaled_output_chunk<T>(sums + i * n_out, xs[i], ws, ws_step, o, bias, dst, accumulate);
}

// The vector kernel where it applies (16-bit outputs, aligned rows of whole vectors); a
// template so the float instantiation is never made.
template <typename T>
bool launch_vec(const Tensor& out, const float* sums, const float* act_scales, const Fp8Weight& w, const Tensor& bias,
                bool accumulate, int64_t ws_step, cudaStream_t stream) {
  if constexpr (sizeof(T) != 2) {
    return false;
  } else {
    const int64_t n = out.size(0), n_out = out.size(1);
    if (n_out % 8 != 0 || !aligned16(out.data) || out.stride[0] % 8 != 0 || !aligned16(sums) ||
        (bias.defined() && !aligned16(bias.data)))
      return false;
    launch_kernel(fp8_scale_epilogue_vec_kernel<T>, dim3(unsigned(div_up(n_out, kThreads * 8)), unsigned(n)), kThreads,
                  0, stream, out.ptr<T>(), out.stride[0], sums, act_scales, w.w_scale.ptr<const float>(), ws_step,
                  bias.defined() ? bias.ptr<const T>() : static_cast<const T*>(nullptr), n_out, accumulate);
    SEAM_CUDA_CHECK_LAUNCH();
    return true;
  }
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
    if (launch_vec<T>(out, sums, act_scales, w, bias, accumulate, ws_step, stream)) return;
    launch_kernel(fp8_scale_epilogue_kernel<T>, dim3(unsigned(div_up(n_out, kThreads)), unsigned(n)), kThreads, 0,
                  stream, out.ptr<T>(), out.stride[0], sums, act_scales, w.w_scale.ptr<const float>(), ws_step,
                  bias.defined() ? bias.ptr<const T>() : static_cast<const T*>(nullptr), n_out, accumulate);
    SEAM_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace seam::cuda
