#include "backend/cuda/gemv.h"

#include "backend/cuda/cuda_common.cuh"

namespace seam::cuda {

namespace {

constexpr int kWarps = 8;   // per block; the block's rows times the K slices of each row
constexpr int kUnroll = 4;  // 16-byte weight loads in flight per lane before any math

// Weights are read once per step and never reused by this kernel: load them
// without allocating in L1 so x (read by every warp) stays there.
__device__ __forceinline__ uint4 load_stream(const uint4* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

template <typename T>
__device__ __forceinline__ void unpack(const uint4& raw, float (&f)[8]) {
  const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
  for (int i = 0; i < 8; ++i) f[i] = to_float(e[i]);
}

// A block's 8 warps cover kWarps / S output features, S warps each (S "K slices": one
// contiguous part of the row each). A warp streams its part of w's row in 16-byte
// vectors, kUnroll at a time per lane, and dots each with the M rows of x (read through
// L1, shared by all warps of the SM); shuffles reduce the lanes, shared memory the
// slices. Slicing K keeps enough loads in flight when n_out is small (the 0.5B/1B
// shapes' 896/2048 features would leave most SMs idle at one warp per feature).
//
// Fusions (GemvFusion): with NORM the product is taken with rms_norm(x) * g instead of
// x: the loop dots w with x * g and sums x^2 on the side (the slices of a row cover all
// of x between them), and the epilogue scales by 1 / rms. No block needs x normalised
// before it starts, so the norm costs no kernel, no barrier and no extra pass. With
// `accumulate` the result is added to out (each element has one owner: in place is safe).
// Invariant: n_in % 8 == 0 and every row 16-byte aligned (gemv_applies).
template <typename T, typename TO, int M, int S, bool NORM>
__global__ void __launch_bounds__(kWarps * 32)
    gemv_kernel(TO* __restrict__ out, int64_t out_stride, const T* __restrict__ x, int64_t x_stride,
                const T* __restrict__ w, const T* __restrict__ bias, const T* __restrict__ norm_w, float eps,
                bool accumulate, int n_out, int n_in) {
  pdl_begin();
  __shared__ float partial[kWarps][M];     // [warp, x row]: each slice's sums
  __shared__ float partial_ss[kWarps][M];  // [warp, x row]: each slice's sum of x^2 (NORM)
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int row = blockIdx.x * (kWarps / S) + warp / S, slice = warp % S;
  const int n_vec = n_in / 8, per_slice = (n_vec + S - 1) / S;
  const int v_begin = slice * per_slice, v_end = min(n_vec, v_begin + per_slice);
  float acc[M], ss[M];
#pragma unroll
  for (int r = 0; r < M; ++r) acc[r] = ss[r] = 0.f;

  if (row < n_out) {  // no early return: the slices meet at a barrier below
    const uint4* w_row = reinterpret_cast<const uint4*>(w + int64_t(row) * n_in);
    for (int base = v_begin + lane; base < v_end; base += 32 * kUnroll) {
      uint4 wv[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int j = base + u * 32;
        wv[u] = j < v_end ? load_stream(w_row + j) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int j = base + u * 32;
        if (j >= v_end) break;
        float wf[8];
        unpack<T>(wv[u], wf);
        float gf[8];
        if constexpr (NORM) unpack<T>(__ldg(reinterpret_cast<const uint4*>(norm_w) + j), gf);
#pragma unroll
        for (int r = 0; r < M; ++r) {
          float xf[8];
          unpack<T>(__ldg(reinterpret_cast<const uint4*>(x + r * x_stride) + j), xf);
          if constexpr (NORM) {
#pragma unroll
            for (int i = 0; i < 8; ++i) {
              ss[r] = fmaf(xf[i], xf[i], ss[r]);
              xf[i] *= gf[i];
            }
          }
#pragma unroll
          for (int i = 0; i < 8; ++i) acc[r] = fmaf(wf[i], xf[i], acc[r]);
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < M; ++r) {
    acc[r] = warp_sum(acc[r]);
    if constexpr (NORM) ss[r] = warp_sum(ss[r]);
  }
  if constexpr (S > 1) {
    if (lane == 0) {
#pragma unroll
      for (int r = 0; r < M; ++r) {
        partial[warp][r] = acc[r];
        if constexpr (NORM) partial_ss[warp][r] = ss[r];
      }
    }
    __syncthreads();
    if (slice != 0) return;
#pragma unroll
    for (int r = 0; r < M; ++r) {
      acc[r] = ss[r] = 0.f;
#pragma unroll
      for (int s = 0; s < S; ++s) {  // fixed order: deterministic
        acc[r] += partial[warp + s][r];
        if constexpr (NORM) ss[r] += partial_ss[warp + s][r];
      }
    }
  }
  if (row >= n_out) return;
  const float b = bias != nullptr ? to_float(bias[row]) : 0.f;
#pragma unroll
  for (int r = 0; r < M; ++r) {
    if (lane != r) continue;
    float y = acc[r];
    if constexpr (NORM) y *= 1.f / sqrtf(ss[r] / float(n_in) + eps);  // as rms_norm.cu
    y += b;
    TO* o = out + r * out_stride + row;
    *o = from_float<TO>(accumulate ? to_float(*o) + y : y);
  }
}

// K slices per feature: double while the grid has fewer warps than the GPU holds at
// once and each slice keeps at least one vector per lane.
int slices_for(int n_out, int n_in) {
  static const int resident_warps = [] {
    int dev = 0, sms = 0, threads = 0;
    SEAM_CUDA_CHECK(cudaGetDevice(&dev));
    SEAM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    SEAM_CUDA_CHECK(cudaDeviceGetAttribute(&threads, cudaDevAttrMaxThreadsPerMultiProcessor, dev));
    return sms * threads / 32;
  }();
  const int n_vec = n_in / 8;
  int s = 1;
  while (s < kWarps && int64_t(n_out) * s < resident_warps && n_vec / (2 * s) >= 32) s *= 2;
  return s;
}

template <typename T, typename TO, int M, int S>
void launch_sliced(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias, const GemvFusion& f,
                   cudaStream_t stream) {
  const int n_out = int(w.size(0)), n_in = int(w.size(1));
  const T* norm_w = f.norm_weight.defined() ? f.norm_weight.ptr<T>() : nullptr;
  auto kernel = norm_w != nullptr ? gemv_kernel<T, TO, M, S, true> : gemv_kernel<T, TO, M, S, false>;
  launch_kernel(kernel, div_up(n_out, kWarps / S), kWarps * 32, 0, stream, out.ptr<TO>(), out.stride[0], x.ptr<T>(),
                x.stride[0], w.ptr<T>(), bias.defined() ? bias.ptr<T>() : nullptr, norm_w, f.eps, f.accumulate,
                n_out, n_in);
  SEAM_CUDA_CHECK_LAUNCH();
}

template <typename T, typename TO, int M>
void launch_rows(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias, const GemvFusion& f,
                 cudaStream_t stream) {
  switch (slices_for(int(w.size(0)), int(w.size(1)))) {
    case 1:
      return launch_sliced<T, TO, M, 1>(out, x, w, bias, f, stream);
    case 2:
      return launch_sliced<T, TO, M, 2>(out, x, w, bias, f, stream);
    case 4:
      return launch_sliced<T, TO, M, 4>(out, x, w, bias, f, stream);
    default:
      return launch_sliced<T, TO, M, 8>(out, x, w, bias, f, stream);
  }
}

}  // namespace

bool gemv_applies(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias) {
  static_assert(kGemvMaxRows == 1, "launch_gemv instantiates the kernel for one row of x only");
  const bool half = x.dtype == DType::bf16 || x.dtype == DType::f16;
  const int64_t m = x.ndim == 2 ? x.size(0) : 0;
  return half && w.dtype == x.dtype && (out.dtype == x.dtype || out.dtype == DType::f32) &&
         (!bias.defined() || (bias.dtype == w.dtype && bias.contiguous())) && m >= 1 && m <= kGemvMaxRows &&
         w.ndim == 2 && w.contiguous() && w.size(1) % 8 == 0 && w.size(0) < (int64_t(1) << 31) &&
         w.size(1) < (int64_t(1) << 31) && aligned16(w.data) && rows_vectorizable(x, x.size(1));
}

void launch_gemv(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias, const GemvFusion& f,
                 cudaStream_t stream) {
  SEAM_ASSERT(gemv_applies(out, x, w, bias));
  SEAM_ASSERT(!f.norm_weight.defined() ||
              (f.norm_weight.dtype == x.dtype && f.norm_weight.contiguous() && f.norm_weight.numel() == x.size(1) &&
               aligned16(f.norm_weight.data)));
  SEAM_ASSERT(!f.accumulate || out.dtype == x.dtype);
  if (w.size(0) == 0) return;
  // One row of x (kGemvMaxRows): the kernel takes any M, but at 2 rows cuBLASLt was already faster (gemv.h).
  if (x.dtype == DType::bf16) {
    if (out.dtype == DType::f32) return launch_rows<__nv_bfloat16, float, 1>(out, x, w, bias, f, stream);
    return launch_rows<__nv_bfloat16, __nv_bfloat16, 1>(out, x, w, bias, f, stream);
  }
  if (out.dtype == DType::f32) return launch_rows<__half, float, 1>(out, x, w, bias, f, stream);
  launch_rows<__half, __half, 1>(out, x, w, bias, f, stream);
}

}  // namespace seam::cuda
