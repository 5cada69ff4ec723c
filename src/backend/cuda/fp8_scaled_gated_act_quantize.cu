#include "backend/cuda/fp8_scaled_gated_act_quantize.h"

#include "backend/cuda/activation.cuh"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/fp8_act.cuh"
#include "backend/cuda/fp8_row_quantize.cuh"

namespace seam::cuda {

namespace {

constexpr int64_t kMaxInter = 16384;

__device__ __forceinline__ float lane_of(const float4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// One block a row, fp8_gated_act_quantize.cu's row layout (chunk c of 8 values in thread
// c % kRowThreads): every load of the row's gate and up sums is issued before the first store
// (act may alias them as far as the compiler knows), then per element the scale epilogue's
// arithmetic for gate and for up (fp8_scale_epilogue.cu: (xs * ws) * S rounded to T), the
// gated activation's (f(gate) * up rounded to T), act stored 16 bytes at a time, and the row's
// codes and scale from the held values (fp8_row_quantize.cuh).
template <typename T, Activation F, int kRowThreads, int kChunks>
__global__ void __launch_bounds__(kRowThreads)
    fp8_scaled_gated_act_quantize_kernel(T* act, int64_t act_stride, uint8_t* codes, float* scales, const float* sums,
                                         const float* xs, const float* ws, int ws_step, int inter, float ub) {
  pdl_begin();
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x;
  const float4* gate = reinterpret_cast<const float4*>(sums + row * 2 * inter);
  const float4* up = gate + inter / 4;
  uint4* out = reinterpret_cast<uint4*>(act + row * act_stride);
  const int n_chunks = inter / 8;
  float4 g[kChunks][2], u[kChunks][2];
#pragma unroll
  for (int s = 0; s < kChunks; ++s) {
    const int c = s * kRowThreads + int(threadIdx.x);
    const bool in = c < n_chunks;
    g[s][0] = in ? gate[2 * c] : make_float4(0.f, 0.f, 0.f, 0.f);
    g[s][1] = in ? gate[2 * c + 1] : make_float4(0.f, 0.f, 0.f, 0.f);
    u[s][0] = in ? up[2 * c] : make_float4(0.f, 0.f, 0.f, 0.f);
    u[s][1] = in ? up[2 * c + 1] : make_float4(0.f, 0.f, 0.f, 0.f);
  }
  const float x_s = xs[row];
  uint4 v[kChunks];
#pragma unroll
  for (int s = 0; s < kChunks; ++s) {
    const int c = s * kRowThreads + int(threadIdx.x);
    v[s] = make_uint4(0, 0, 0, 0);
    if (c >= n_chunks) continue;
    T* ve = reinterpret_cast<T*>(&v[s]);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int k = 8 * c + i;
      const float gv = to_float(from_float<T>((x_s * ws[int64_t(k) * ws_step]) * lane_of(g[s][i / 4], i % 4)));
      const float uv =
          to_float(from_float<T>((x_s * ws[int64_t(inter + k) * ws_step]) * lane_of(u[s][i / 4], i % 4)));
      ve[i] = from_float<T>(activate<F>(gv) * uv);
    }
    out[c] = v[s];
  }
  quantize_row_chunks<T, kRowThreads, kChunks>(v, n_chunks, int(Fp8ActScheme::dynamic_per_token), 0.f, ub,
                                               codes + row * inter, scales, row, gridDim.x, scratch);
}

template <typename T>
void launch_typed(const Tensor& act, uint8_t* codes, float* scales, const float* sums, const float* xs,
                  const Fp8Weight& w, Activation f, float ub, cudaStream_t stream) {
  if constexpr (sizeof(T) != 2) {
    SEAM_ASSERT(false, "fp8 scaled gated act quantize: 16-bit outputs only");
  } else {
    const int64_t n = act.size(0), inter = act.size(1);
    const int ws_step = w.w_scheme == Fp8WeightScheme::per_channel ? 1 : 0;
    const auto launch = [&](auto threads_c, auto k) {
      constexpr int kThreadsC = decltype(threads_c)::value, K = decltype(k)::value;
      auto kernel = f == Activation::silu ? fp8_scaled_gated_act_quantize_kernel<T, Activation::silu, kThreadsC, K>
                                          : fp8_scaled_gated_act_quantize_kernel<T, Activation::gelu_tanh, kThreadsC, K>;
      launch_kernel(kernel, dim3(unsigned(n)), kThreadsC, 0, stream, act.ptr<T>(), act.stride[0], codes, scales, sums,
                    xs, w.w_scale.ptr<const float>(), ws_step, int(inter), ub);
    };
    // At most 2 chunks a thread (16 sums each in registers): 256 threads up to 4,096 values,
    // 1,024 up to 16,384 (fp8_gated_act_quantize.cu's block for such rows).
    if (fp8_row_chunks(inter, 256) <= 2)
      launch(std::integral_constant<int, 256>{}, std::integral_constant<int, 2>{});
    else
      launch(std::integral_constant<int, 1024>{}, std::integral_constant<int, 2>{});
    SEAM_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace

bool fp8_scaled_gated_act_quantize_applies(const Tensor& act, const Fp8Weight& w) {
  if (act.ndim != 2 || (act.dtype != DType::bf16 && act.dtype != DType::f16) || act.stride[1] != 1) return false;
  const int64_t inter = act.size(1);
  return inter > 0 && inter % 8 == 0 && inter <= kMaxInter && aligned16(act.data) && act.stride[0] % 8 == 0 &&
         w.act == Fp8ActScheme::dynamic_per_token &&
         (w.w_scheme == Fp8WeightScheme::per_channel || w.w_scheme == Fp8WeightScheme::per_tensor) &&
         w.w.defined() && w.w.ndim == 2 && w.w.size(0) == 2 * inter;
}

void launch_fp8_scaled_gated_act_quantize(const Tensor& act, uint8_t* codes, float* scales, const float* sums,
                                          const float* xs, const Fp8Weight& w, Activation f, float ub,
                                          cudaStream_t stream) {
  SEAM_CHECK(fp8_scaled_gated_act_quantize_applies(act, w), "fp8 scaled gated act quantize: not available for act ",
             act.shape_str(), " (16-bit, packed aligned rows, inter % 8 == 0 and <= ", kMaxInter,
             ", a per-channel or per-tensor weight of 2 inter rows, per-token activations)");
  SEAM_CHECK((reinterpret_cast<uintptr_t>(codes) & 7) == 0 && aligned16(sums),
             "fp8 scaled gated act quantize: codes must be 8-byte and sums 16-byte aligned");
  if (act.size(0) == 0) return;
  SEAM_CHECK(act.size(0) <= INT32_MAX, "fp8 scaled gated act quantize: too many rows");
  SEAM_DISPATCH_FLOAT_TYPES(act.dtype, T, "fp8 scaled gated act quantize",
                            [&] { launch_typed<T>(act, codes, scales, sums, xs, w, f, ub, stream); });
}

}  // namespace seam::cuda
