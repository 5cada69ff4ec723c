#include "backend/cuda/moe_combine.h"

#include <type_traits>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/diagnostic_switch.h"
#include "backend/cuda/moe_common.cuh"

namespace seam::cuda {

namespace {

// 8 consecutive expert outputs from 16-bit rows or float32 ones (two 16-byte loads).
//
// kVector false is the form as first built: unpack_vec's `const uint4&` parameter bound straight to
// the global row (`*reinterpret_cast<const uint4*>(p)`) is no copy, so unpack_vec's 2-byte element
// reads are global loads themselves: the PTX has eight ld.global.u16 a row vector, not one
// ld.global.v4 (read off the PTX, 2026-12-04). A warp's such load spans 512 bytes for 64 useful
// ones, eight times over: the likely reason this kernel ran at ~1.5 TB/s (~97 us a Qwen3-30B-A3B
// prefill layer against ~42 of bytes: 168 MB), where more rows in flight did not help. kVector true
// copies the vector into a register first (one ld.global.v4) and reads and writes out's 8
// columns as one vector too; the arithmetic, and so every bit, is the same.
template <typename T, bool kVector>
__device__ __forceinline__ void load8(const T* p, float (&f)[8]) {
  if constexpr (kVector) {
    const uint4 raw = *reinterpret_cast<const uint4*>(p);  // a value: one 16-byte load
    unpack_vec<T>(raw, f);
  } else {
    unpack_vec<T>(*reinterpret_cast<const uint4*>(p), f);
  }
}
template <typename T, bool kVector>
__device__ __forceinline__ void load8(const float* p, float (&f)[8]) {
  const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
  f[0] = a.x, f[1] = a.y, f[2] = a.z, f[3] = a.w, f[4] = b.x, f[5] = b.y, f[6] = b.z, f[7] = b.w;
}

// TE: the expert outputs' type (T, or float32 unrounded). kVector: above (out's row then needs
// 16-byte alignment, which the launcher checks).
template <typename T, typename TE, bool kVector>
__device__ __forceinline__ void moe_combine_body(T* out, int64_t out_stride, const TE* expert_out,
                                                 const float* weights, int64_t n, int k, int hidden) {
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
      load8<T, kVector>(expert_out + (i * k + j) * hidden + v * 8, y);
#pragma unroll
      for (int c = 0; c < 8; ++c) acc[c] += w * y[c];
    }
    T* o = out + i * out_stride + v * 8;
    if constexpr (kVector) {
      uint4 raw = *reinterpret_cast<const uint4*>(o);
      T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
      for (int c = 0; c < 8; ++c) e[c] = from_float<T>(to_float(e[c]) + acc[c]);
      *reinterpret_cast<uint4*>(o) = raw;
    } else {
#pragma unroll
      for (int c = 0; c < 8; ++c) o[c] = from_float<T>(to_float(o[c]) + acc[c]);
    }
  }
}

template <typename T, typename TE>
__global__ void moe_combine_vec_kernel(T* out, int64_t out_stride, const TE* expert_out, const float* weights,
                                       int64_t n, int k, int hidden) {
  pdl_begin();
  moe_combine_body<T, TE, false>(out, out_stride, expert_out, weights, n, k, hidden);
}

// The vector form takes 40 registers a thread (ptxas, sm_90a; held to 32 it spills), so 6 blocks
// of 256 an SM: its grid is one wave of those (kVectorBlocksPerSm), where the scalar form's (32
// registers) is one wave of 8 blocks an SM.
constexpr int kVectorBlocksPerSm = 6;
template <typename T, typename TE>
__global__ void __launch_bounds__(256, kVectorBlocksPerSm)
    moe_combine_vector_kernel(T* out, int64_t out_stride, const TE* expert_out, const float* weights, int64_t n, int k,
                              int hidden) {
  pdl_begin();
  moe_combine_body<T, TE, true>(out, out_stride, expert_out, weights, n, k, hidden);
}

}  // namespace

MoeCombineForm moe_combine_form_default() {
  // 1: vector, the default (H200, 2026-12-05: Qwen3-30B-A3B prefill of 4,096 +0.3 % alone and batch 64 -0.8 %,
  // docs/performance.md, twenty-eighth pass), 0: scalar (the form as first built).
  static const int v = env_choice("SEAM_MOE_COMBINE_VECTOR", 1, {0, 1});
  return v == 1 ? MoeCombineForm::vector : MoeCombineForm::scalar;
}

bool moe_combine_takes_vector(const Tensor& out, const Tensor& expert_out, MoeCombineForm form) {
  // float32 expert rows are read as float4 values in both forms (load8<float>): they keep the
  // scalar form, whose 43 registers need no bound (held to the vector form's 6 blocks it spills).
  return form == MoeCombineForm::vector && expert_out.dtype != DType::f32 && aligned16(out.data) &&
         (out.stride[0] * int64_t(dtype_size(out.dtype))) % 16 == 0;
}

void launch_moe_combine(const Tensor& out, const Tensor& expert_out, const Tensor& topk_weights, cudaStream_t stream,
                        MoeCombineForm form) {
  const int64_t n = out.size(0);
  const int hidden = int(out.size(1)), k = int(topk_weights.size(1));
  SEAM_ASSERT(hidden % 8 == 0 && aligned16(expert_out.data) &&
              (expert_out.dtype == out.dtype || expert_out.dtype == DType::f32) && expert_out.size(1) == hidden &&
              expert_out.size(0) >= n * k);
  if (n == 0) return;
  const bool vector = moe_combine_takes_vector(out, expert_out, form);
  const unsigned blocks = unsigned(
      std::min<int64_t>(div_up(n * (hidden / 8), 256), int64_t(current_device_sms()) * (vector ? kVectorBlocksPerSm : 8)));
  auto go = [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    auto run = [&](auto kernel, const auto* rows) {
      launch_kernel(kernel, dim3(blocks), dim3(256), 0, stream, out.ptr<T>(), out.stride[0], rows,
                    topk_weights.ptr<float>(), n, k, hidden);
    };
    if (expert_out.dtype == DType::f32) {
      run(moe_combine_vec_kernel<T, float>, expert_out.ptr<float>());
    } else {
      const T* rows = expert_out.ptr<T>();
      vector ? run(moe_combine_vector_kernel<T, T>, rows) : run(moe_combine_vec_kernel<T, T>, rows);
    }
  };
  if (out.dtype == DType::bf16) go(static_cast<__nv_bfloat16*>(nullptr));
  else go(static_cast<__half*>(nullptr));
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace seam::cuda
