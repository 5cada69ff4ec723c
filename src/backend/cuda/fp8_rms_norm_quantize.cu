#include "backend/cuda/fp8_rms_norm_quantize.h"

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/fp8_act.cuh"
#include "backend/cuda/fp8_row_quantize.cuh"
#include "backend/cuda/rms_norm_chunks.cuh"

namespace seam::cuda {

namespace {

constexpr int kThreads = 256;  // rms_norm.cu's block per row

// One block per row: the sum of squares as rms_norm.cu sums it (V elements per thread and
// step, then block_sum), the normed values recomputed where needed (the same expression, so
// the same values), their amax per token (block max) or per 128-wide group (a warp per group),
// then the codes.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    fp8_rms_norm_quantize_kernel(uint8_t* codes, float* scales, const T* x, int64_t x_stride, const T* g, int n_in,
                                 int V, float eps, int n_groups, int act, const float* input_scale, float ub) {
  pdl_begin();
  extern __shared__ float s_scale[];  // [n_groups]
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x, n_rows = gridDim.x;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const T* xr = x + row * x_stride;
  float ss = 0.f;
  for (int j = threadIdx.x * V; j < n_in; j += kThreads * V)
    for (int i = 0; i < V; ++i) {
      const float v = to_float(xr[j + i]);
      ss += v * v;
    }
  ss = block_sum(ss, scratch);
  const float inv_rms = 1.f / sqrtf(ss / float(n_in) + eps);
  auto normed = [&](int k) { return to_float(from_float<T>(to_float(xr[k]) * inv_rms * to_float(g[k]))); };
  if (act == int(Fp8ActScheme::static_per_tensor)) {
    if (threadIdx.x == 0) s_scale[0] = *input_scale;
  } else if (act == int(Fp8ActScheme::dynamic_group128)) {
    for (int gi = warp; gi < n_groups; gi += kThreads / 32) {
      float amax = 0.f;
      for (int k = gi * 128 + lane; k < min(n_in, gi * 128 + 128); k += 32) amax = fmaxf(amax, fabsf(normed(k)));
      amax = warp_max(amax);
      if (lane == 0) s_scale[gi] = fp8_act_scale(amax, ub);
    }
  } else {
    float amax = 0.f;
    for (int k = threadIdx.x; k < n_in; k += kThreads) amax = fmaxf(amax, fabsf(normed(k)));
    amax = block_max(amax, scratch);
    if (threadIdx.x == 0) s_scale[0] = fp8_act_scale(amax, ub);
  }
  __syncthreads();
  for (int gi = threadIdx.x; gi < n_groups; gi += kThreads) scales[int64_t(gi) * n_rows + row] = s_scale[gi];
  const int width = act == int(Fp8ActScheme::dynamic_group128) ? 128 : n_in;
  for (int k = threadIdx.x; k < n_in; k += kThreads) codes[row * n_in + k] = fp8_act_code(normed(k), s_scale[k / width]);
}

// The register path (fp8_row_quantize.cuh): x and the norm weight read once in 16-byte
// vectors; the chunk layout is rms_norm.cu's vector walk at kThreads (thread t, step s:
// elements 8 (t + s kThreads)), so the sum of squares is summed in rms_norm.cu's order and the
// normed values are the kernel above's, bit for bit (rms_norm_chunks.cuh: the norm shared with
// fp8_scale_norm_quantize.cu). That kernel re-reads the row for the
// amax and the codes over 2-byte loads (54 µs for 4,096 x 4,096 bf16 on the H200).
template <typename T, int kChunks>
__global__ void __launch_bounds__(kThreads)
    fp8_rms_norm_quantize_row_kernel(uint8_t* codes, float* scales, const T* x, int64_t x_stride, const T* g,
                                     int n_in, float eps, int act, const float* input_scale, float ub) {
  pdl_begin();
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x;
  const uint4* xr = reinterpret_cast<const uint4*>(x + row * x_stride);
  const int n_chunks = n_in / 8;
  uint4 v[kChunks];
#pragma unroll
  for (int s = 0; s < kChunks; ++s) {
    const int c = s * kThreads + int(threadIdx.x);
    v[s] = c < n_chunks ? xr[c] : make_uint4(0, 0, 0, 0);
  }
  rms_norm_row_chunks<T, kThreads, kChunks>(v, n_chunks, g, n_in, eps, scratch);
  const float static_scale = act == int(Fp8ActScheme::static_per_tensor) ? *input_scale : 0.f;
  quantize_row_chunks<T, kThreads, kChunks>(v, n_chunks, act, static_scale, ub, codes + row * n_in, scales, row,
                                            gridDim.x, scratch);
}

// For vector-aligned rows (the caller's `vec`; kVec<T> == 8 for 16-bit T, so the chunks are
// its vectors).
template <typename T>
bool launch_row_path(const Tensor& codes, const Tensor& scales, const Tensor& x, const Tensor& norm_weight, float eps,
                     const Fp8Weight& w, const float* input_scale, cudaStream_t stream) {
  if constexpr (sizeof(T) != 2) {
    return false;
  } else {
    const int64_t n = x.size(0), n_in = x.size(1);
    if (!fp8_row_path_applies(sizeof(T), n_in, codes.ptr<uint8_t>(), kThreads)) return false;
    with_row_chunks(fp8_row_chunks(n_in, kThreads), [&](auto k) {
      launch_kernel(fp8_rms_norm_quantize_row_kernel<T, decltype(k)::value>, dim3(unsigned(n)), kThreads, 0, stream,
                    codes.ptr<uint8_t>(), scales.ptr<float>(), x.ptr<const T>(), x.stride[0],
                    norm_weight.ptr<const T>(), int(n_in), eps, int(w.act), input_scale, w.act_amax_ub);
    });
    SEAM_CUDA_CHECK_LAUNCH();
    return true;
  }
}

}  // namespace

void launch_fp8_rms_norm_quantize(const Tensor& codes, const Tensor& scales, const Tensor& x, const Tensor& norm_weight,
                                  float eps, const Fp8Weight& w, cudaStream_t stream) {
  const int64_t n = x.size(0), n_in = x.size(1);
  if (n == 0 || n_in == 0) return;
  const bool grouped = w.act == Fp8ActScheme::dynamic_group128;
  const int n_groups = grouped ? int(div_up(n_in, kFp8Group)) : 1;
  SEAM_ASSERT(codes.dtype == DType::fp8_e4m3 && codes.contiguous() && codes.numel() >= n * n_in);
  SEAM_ASSERT(scales.dtype == DType::f32 && scales.contiguous() && scales.numel() >= n * n_groups);
  SEAM_ASSERT(n <= INT32_MAX && n_in <= INT32_MAX);
  SEAM_CHECK(norm_weight.dtype == x.dtype && norm_weight.numel() == n_in && norm_weight.contiguous(),
             "fp8 rms_norm: norm weight must be [", n_in, "] in ", dtype_name(x.dtype), ", got ",
             norm_weight.shape_str(), " ", dtype_name(norm_weight.dtype));
  const float* input_scale = w.act == Fp8ActScheme::static_per_tensor ? w.input_scale.ptr<float>() : nullptr;
  SEAM_DISPATCH_FLOAT_TYPES(x.dtype, T, "fp8 rms_norm quantize", [&] {
    // rms_norm.cu's V: 16-byte vectors when the rows and the weight are aligned for them.
    const bool vec = reinterpret_cast<uintptr_t>(x.data) % 16 == 0 && x.stride[0] % kVec<T> == 0 &&
                     n_in % kVec<T> == 0 && reinterpret_cast<uintptr_t>(norm_weight.data) % 16 == 0;
    if (vec && launch_row_path<T>(codes, scales, x, norm_weight, eps, w, input_scale, stream)) return;
    launch_kernel(fp8_rms_norm_quantize_kernel<T>, dim3(unsigned(n)), kThreads, size_t(n_groups) * sizeof(float),
                  stream, codes.ptr<uint8_t>(), scales.ptr<float>(), x.ptr<const T>(), x.stride[0],
                  norm_weight.ptr<const T>(), int(n_in), vec ? kVec<T> : 1, eps, n_groups, int(w.act), input_scale,
                  w.act_amax_ub);
    SEAM_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace seam::cuda
