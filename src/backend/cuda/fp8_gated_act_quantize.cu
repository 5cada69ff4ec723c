#include "backend/cuda/fp8_gated_act_quantize.h"

#include "backend/cuda/activation.cuh"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/fp8_act.cuh"
#include "backend/cuda/fp8_row_quantize.cuh"

namespace seam::cuda {

namespace {

constexpr int kThreads = 256;

// One block per row. act's value at k is recomputed wherever it is needed (the same
// expression, so the same value): written once, then its amax per token (block max) or per
// 128-wide group (a warp per group), then its code.
template <typename T, Activation F>
__global__ void __launch_bounds__(kThreads)
    fp8_gated_act_quantize_kernel(T* act, int64_t act_stride, uint8_t* codes, float* scales, const T* gate_up,
                                  int64_t gu_stride, int inter, int n_groups, bool grouped, float ub) {
  pdl_begin();
  extern __shared__ float s_scale[];  // [n_groups]
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x, n_rows = gridDim.x;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const T* gr = gate_up + row * gu_stride;
  // gated_act.cu's arithmetic: f(gate) * up in float32, rounded to T.
  auto value = [&](int k) { return to_float(from_float<T>(activate<F>(to_float(gr[k])) * to_float(gr[inter + k]))); };
  float amax = 0.f;
  for (int k = threadIdx.x; k < inter; k += kThreads) {
    const float v = value(k);
    act[row * act_stride + k] = from_float<T>(v);
    amax = fmaxf(amax, fabsf(v));
  }
  if (grouped) {
    for (int gi = warp; gi < n_groups; gi += kThreads / 32) {
      float ga = 0.f;
      for (int k = gi * 128 + lane; k < min(inter, gi * 128 + 128); k += 32) ga = fmaxf(ga, fabsf(value(k)));
      ga = warp_max(ga);
      if (lane == 0) s_scale[gi] = fp8_act_scale(ga, ub);
    }
  } else {
    amax = block_max(amax, scratch);
    if (threadIdx.x == 0) s_scale[0] = fp8_act_scale(amax, ub);
  }
  __syncthreads();
  for (int gi = threadIdx.x; gi < n_groups; gi += kThreads) scales[int64_t(gi) * n_rows + row] = s_scale[gi];
  const int width = grouped ? 128 : inter;
  for (int k = threadIdx.x; k < inter; k += kThreads) codes[row * inter + k] = fp8_act_code(value(k), s_scale[k / width]);
}

// The register path (fp8_row_quantize.cuh): the row's gate and up read once in 16-byte
// vectors, f(gate) * up computed once per element (the expression above) and held rounded to
// T, act stored in 16-byte vectors, codes 8 at a time. The kernel above evaluates f twice per
// element over 2-byte loads and stores codes a byte at a time: 592 µs for 4,096 x 14,336 on
// the H200 (CUPTI, FP8 prefill of 4,096 tokens), ~6 x the bytes' time.
//
// Block size: the per-element arithmetic (f, the product's rounding, the IEEE division of the
// code) is long and dependent. At decode sizes (one block an SM at most) a row is latency
// bound on its block's warps: at 256 threads a 14,336-wide row is 7 chunks a thread and took
// 14.6 us at 64 rows (CUPTI, FP8 decode batch 64 on the H200; ~1.6 us of bytes). Rows wider
// than 4,096 therefore take 1,024 threads at 2 chunks (up to 32,768: 512 at 8), 4x the warps;
// with RoPE's rework the FP8 batch-64 step went 4.74 -> 4.40 ms. At prefill sizes the kernel
// is issue bound instead (ncu: 0.71 issued a scheduler a cycle, ~54 instructions an element,
// DRAM 45 %), and the block size did not move it (docs/performance.md, nineteenth pass).
template <typename T, Activation F, int kRowThreads, int kChunks>
__global__ void __launch_bounds__(kRowThreads)
    fp8_gated_act_quantize_row_kernel(T* act, int64_t act_stride, uint8_t* codes, float* scales, const T* gate_up,
                                      int64_t gu_stride, int inter, int scheme, float ub) {
  pdl_begin();
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x;
  const uint4* gate = reinterpret_cast<const uint4*>(gate_up + row * gu_stride);
  const uint4* up = reinterpret_cast<const uint4*>(gate_up + row * gu_stride + inter);
  uint4* out = reinterpret_cast<uint4*>(act + row * act_stride);
  const int n_chunks = inter / 8;
  // Every load is issued before the first store: act may alias gate_up as far as the compiler
  // knows, so a store between them would keep later loads from being hoisted (one memory
  // round trip per chunk: 213 µs for 4,096 x 14,336 on the H200 with the loads interleaved).
  uint4 g[kChunks], u[kChunks];
#pragma unroll
  for (int s = 0; s < kChunks; ++s) {
    const int c = s * kRowThreads + int(threadIdx.x);
    g[s] = c < n_chunks ? gate[c] : make_uint4(0, 0, 0, 0);
    u[s] = c < n_chunks ? up[c] : make_uint4(0, 0, 0, 0);
  }
  uint4 v[kChunks];
#pragma unroll
  for (int s = 0; s < kChunks; ++s) {
    const int c = s * kRowThreads + int(threadIdx.x);
    v[s] = make_uint4(0, 0, 0, 0);
    if (c >= n_chunks) continue;
    const T* ge = reinterpret_cast<const T*>(&g[s]);
    const T* ue = reinterpret_cast<const T*>(&u[s]);
    T* ve = reinterpret_cast<T*>(&v[s]);
#pragma unroll
    for (int i = 0; i < 8; ++i) ve[i] = from_float<T>(activate<F>(to_float(ge[i])) * to_float(ue[i]));
    out[c] = v[s];
  }
  quantize_row_chunks<T, kRowThreads, kChunks>(v, n_chunks, scheme, 0.f, ub, codes + row * inter, scales, row,
                                               gridDim.x, scratch);
}

template <typename T>
bool launch_row_path(const Tensor& act, const Tensor& codes, const Tensor& scales, const Tensor& gate_up, Activation f,
                     Fp8ActScheme act_scheme, float ub, cudaStream_t stream) {
  if constexpr (sizeof(T) != 2) {
    return false;
  } else {
    const int64_t n = act.size(0), inter = act.size(1);
    if (!fp8_row_path_applies(sizeof(T), inter, codes.ptr<uint8_t>(), 256) || !aligned16(act.data) ||
        !aligned16(gate_up.data) || act.stride[0] % 8 != 0 || gate_up.stride[0] % 8 != 0)
      return false;
    const auto launch = [&](auto threads_c, auto k) {
      constexpr int kThreadsC = decltype(threads_c)::value, K = decltype(k)::value;
      auto kernel = f == Activation::silu ? fp8_gated_act_quantize_row_kernel<T, Activation::silu, kThreadsC, K>
                                          : fp8_gated_act_quantize_row_kernel<T, Activation::gelu_tanh, kThreadsC, K>;
      launch_kernel(kernel, dim3(unsigned(n)), kThreadsC, 0, stream, act.ptr<T>(), act.stride[0],
                    codes.ptr<uint8_t>(), scales.ptr<float>(), gate_up.ptr<const T>(), gate_up.stride[0], int(inter),
                    int(act_scheme), ub);
    };
    const int k256 = fp8_row_chunks(inter, 256);
    if (k256 > 2 && fp8_row_chunks(inter, 1024) <= 2)
      launch(std::integral_constant<int, 1024>{}, std::integral_constant<int, 2>{});
    else if (k256 > 2 && fp8_row_chunks(inter, 512) <= 8)
      launch(std::integral_constant<int, 512>{}, std::integral_constant<int, 8>{});
    else
      with_row_chunks(k256, [&](auto k) { launch(std::integral_constant<int, 256>{}, k); });
    SEAM_CUDA_CHECK_LAUNCH();
    return true;
  }
}

}  // namespace

void launch_fp8_gated_act_quantize(const Tensor& act, const Tensor& codes, const Tensor& scales, const Tensor& gate_up,
                                   Activation f, Fp8ActScheme act_scheme, float ub, cudaStream_t stream) {
  const int64_t n = act.size(0), inter = act.size(1);
  if (n == 0 || inter == 0) return;
  SEAM_ASSERT(act_scheme != Fp8ActScheme::static_per_tensor, "fp8 gated_act quantize: dynamic schemes only");
  const bool grouped = act_scheme == Fp8ActScheme::dynamic_group128;
  const int n_groups = grouped ? int(div_up(inter, kFp8Group)) : 1;
  SEAM_ASSERT(gate_up.dtype == act.dtype && gate_up.size(0) == n && gate_up.size(1) == 2 * inter);
  SEAM_ASSERT(codes.dtype == DType::fp8_e4m3 && codes.contiguous() && codes.numel() >= n * inter);
  SEAM_ASSERT(scales.dtype == DType::f32 && scales.contiguous() && scales.numel() >= n * n_groups);
  SEAM_ASSERT(n <= INT32_MAX && inter <= INT32_MAX);
  SEAM_DISPATCH_FLOAT_TYPES(act.dtype, T, "fp8 gated_act quantize", [&] {
    if (launch_row_path<T>(act, codes, scales, gate_up, f, act_scheme, ub, stream)) return;
    auto kernel = f == Activation::silu ? fp8_gated_act_quantize_kernel<T, Activation::silu>
                                        : fp8_gated_act_quantize_kernel<T, Activation::gelu_tanh>;
    launch_kernel(kernel, dim3(unsigned(n)), kThreads, size_t(n_groups) * sizeof(float), stream, act.ptr<T>(),
                  act.stride[0], codes.ptr<uint8_t>(), scales.ptr<float>(), gate_up.ptr<const T>(), gate_up.stride[0],
                  int(inter), n_groups, grouped, ub);
    SEAM_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace seam::cuda
