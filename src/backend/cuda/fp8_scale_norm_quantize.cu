#include "backend/cuda/fp8_scale_norm_quantize.h"

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/fp8_row_quantize.cuh"
#include "backend/cuda/fp8_scaled_output.cuh"
#include "backend/cuda/rms_norm_chunks.cuh"

namespace seam::cuda {

namespace {

// fp8_rms_norm_quantize.cu's row kernel's block: the same chunk layout, so the same sum order.
constexpr int kThreads = 256;

// One block a row. Each thread makes its chunks of the new residual row as
// fp8_scale_epilogue.cu's vector kernel does (scaled_output_chunk: two 16-byte loads of sums, scaled_output with the
// previous value), stores them and keeps them in registers; then the norm and the codes exactly as
// the norm kernel computes them from the stored row.
template <typename T, int kChunks>
__global__ void __launch_bounds__(kThreads)
    fp8_scale_norm_quantize_kernel(T* residual, int64_t res_stride, const float* sums, const float* xs,
                                   const float* ws, int64_t ws_step, const T* bias, const T* g, int n_out, float eps,
                                   int act, const float* input_scale, float ub, uint8_t* codes, float* scales,
                                   int64_t r0, int64_t n_rows) {
  pdl_begin();
  __shared__ float scratch[32];
  const int64_t i = blockIdx.x;
  T* rr = residual + i * res_stride;
  const float* sr = sums + i * int64_t(n_out);
  const float x_scale = xs[i];
  const int n_chunks = n_out / 8;
  uint4 v[kChunks];
#pragma unroll
  for (int s = 0; s < kChunks; ++s) {
    const int c = s * kThreads + int(threadIdx.x);
    v[s] = make_uint4(0, 0, 0, 0);
    if (c >= n_chunks) continue;
    const int o = c * 8;
    v[s] = scaled_output_chunk<T>(sr, x_scale, ws, ws_step, o, bias, rr + o, true);
    *reinterpret_cast<uint4*>(rr + o) = v[s];
  }
  rms_norm_row_chunks<T, kThreads, kChunks>(v, n_chunks, g, n_out, eps, scratch);
  const float static_scale = act == int(Fp8ActScheme::static_per_tensor) ? *input_scale : 0.f;
  const int64_t row = r0 + i;
  quantize_row_chunks<T, kThreads, kChunks>(v, n_chunks, act, static_scale, ub, codes + row * n_out, scales, row,
                                            n_rows, scratch);
}

template <typename T>
void launch_typed(const Tensor& residual, const float* sums, const float* act_scales, const Fp8Weight& w,
                  const Tensor& bias, const Tensor& g, float eps, const Fp8Weight& next, uint8_t* codes,
                  float* scales, int64_t r0, int64_t n_rows, cudaStream_t stream) {
  if constexpr (sizeof(T) != 2) {
    SEAM_ASSERT(false, "fp8 scale + norm + quantize: 16-bit residuals only");
  } else {
    const int64_t m = residual.size(0), n_out = residual.size(1);
    const int64_t ws_step = w.w_scheme == Fp8WeightScheme::per_channel ? 1 : 0;
    const float* input_scale =
        next.act == Fp8ActScheme::static_per_tensor ? next.input_scale.ptr<const float>() : nullptr;
    with_row_chunks(fp8_row_chunks(n_out, kThreads), [&](auto k) {
      launch_kernel(fp8_scale_norm_quantize_kernel<T, decltype(k)::value>, dim3(unsigned(m)), kThreads, 0, stream,
                    residual.ptr<T>(), residual.stride[0], sums, act_scales, w.w_scale.ptr<const float>(), ws_step,
                    bias.defined() ? bias.ptr<const T>() : static_cast<const T*>(nullptr), g.ptr<const T>(),
                    int(n_out), eps, int(next.act), input_scale, next.act_amax_ub, codes, scales, r0, n_rows);
    });
    SEAM_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace

bool fp8_scale_norm_quantize_applies(const Tensor& residual, const Fp8Weight& w, const Tensor& bias,
                                     const Tensor& norm_weight, const Fp8Weight& next) {
  if (residual.ndim != 2 || (residual.dtype != DType::bf16 && residual.dtype != DType::f16) ||
      residual.stride[1] != 1 || !aligned16(residual.data) || residual.stride[0] % 8 != 0)
    return false;
  const int64_t n_out = residual.size(1);
  if (n_out <= 0 || n_out % 8 != 0 || fp8_row_chunks(n_out, kThreads) == 0) return false;
  if (w.w_scheme != Fp8WeightScheme::per_channel && w.w_scheme != Fp8WeightScheme::per_tensor) return false;
  if (bias.defined() &&
      (bias.dtype != residual.dtype || bias.numel() != n_out || !bias.contiguous() || !aligned16(bias.data)))
    return false;
  if (!norm_weight.defined() || norm_weight.dtype != residual.dtype || norm_weight.numel() != n_out ||
      !norm_weight.contiguous() || !aligned16(norm_weight.data))
    return false;
  switch (next.act) {
    case Fp8ActScheme::dynamic_per_token:
    case Fp8ActScheme::dynamic_group128:
      return true;
    case Fp8ActScheme::static_per_tensor:
      return next.input_scale.defined();
  }
  return false;
}

void launch_fp8_scale_norm_quantize(const Tensor& residual, const float* sums, const float* act_scales,
                                    const Fp8Weight& w, const Tensor& bias, const Tensor& norm_weight, float eps,
                                    const Fp8Weight& next, uint8_t* codes, float* scales, int64_t r0, int64_t n_rows,
                                    cudaStream_t stream) {
  SEAM_CHECK(fp8_scale_norm_quantize_applies(residual, w, bias, norm_weight, next),
             "fp8 scale + norm + quantize: not available for residual ", residual.shape_str(), " in ",
             dtype_name(residual.dtype), " (16-bit aligned rows of whole vectors up to 16,384 wide, a per-channel or "
             "per-tensor weight, an aligned norm weight of its dtype and width)");
  SEAM_CHECK((reinterpret_cast<uintptr_t>(codes) & 7) == 0 && (reinterpret_cast<uintptr_t>(sums) & 15) == 0,
             "fp8 scale + norm + quantize: codes must be 8-byte and sums 16-byte aligned");
  const int64_t m = residual.size(0);
  SEAM_CHECK(r0 >= 0 && m <= n_rows - r0 && n_rows <= INT32_MAX, "fp8 scale + norm + quantize: rows ", r0, " + ", m,
             " of ", n_rows);
  if (m == 0) return;
  SEAM_DISPATCH_FLOAT_TYPES(residual.dtype, T, "fp8 scale + norm + quantize", [&] {
    launch_typed<T>(residual, sums, act_scales, w, bias, norm_weight, eps, next, codes, scales, r0, n_rows, stream);
  });
}

}  // namespace seam::cuda
