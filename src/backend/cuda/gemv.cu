#include "backend/cuda/gemv.h"

#include "backend/cuda/cuda_common.cuh"

#include <cstdlib>
#include <string>
#include <type_traits>

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

// Everything a launch passes, by value.
template <typename T, typename TO>
struct GemvArgs {
  TO* out;             // [M, n_out] (row stride out_stride)
  int64_t out_stride;
  const T* x;          // [M, n_in] (row stride x_stride)
  int64_t x_stride;
  const T* w;          // [n_out, n_in]; with GLU [2 * n_out, n_in]: the gate rows, then the up rows
  const T* bias;       // [n_out] or null (never with GLU)
  const T* norm_w;     // NORM: [n_in]
  float eps;
  bool accumulate;     // out += result
  bool early_load;     // issue the first weight loads before waiting for the previous kernel
  int n_out, n_in;
};

// A block's 8 warps cover kWarps / S output features, S warps each (S "K slices": one
// contiguous part of the row each). A warp streams its part of w's row in 16-byte
// vectors, kUnroll at a time per lane with the next kUnroll already in flight, and dots
// each with the M rows of x; shuffles reduce the lanes, shared memory the slices.
// Slicing K keeps enough loads in flight when n_out is small (the 0.5B/1B shapes'
// 896/2048 features would leave most SMs idle at one warp per feature).
//
// Fusions, each replacing a kernel of the decode step:
//  * Norm: the product is taken with rms_norm(x) * g, and the epilogue scales by 1 / rms.
//    kNormInline: each warp multiplies the x it reads by g and sums x^2 on the side (the
//    slices of a row cover all of x between them): no prologue, but g and x go through L1
//    in every warp. kNormStaged: the block first stages x * g (rounded to T, as HF rounds the
//    normed activations) in shared memory while summing x^2, with the first sweep's weight
//    loads already in flight. Staging costs a read of x and g per block, so it pays only
//    where a block streams many weight bytes: measured (H200, docs/performance.md), staged
//    was free with GLU (two rows a warp) but 5-75 us slower than inline on single rows
//    (qkv, lm_head), so GLU stages and single rows go inline.
//  * GLU: a warp streams the gate row j and the up row n_out + j and writes
//    silu(gate) * up: the MLP's [gate | up] never reaches memory.
//  * accumulate: out += result (each element has one owner, so in place is safe); the old
//    value is read at the start, off the critical path.
// The weights never change during a run, so with early_load the first sweep's loads go out
// before griddepcontrol.wait: with PDL they overlap the previous kernel's tail.
// Invariant: n_in % 8 == 0 and every row 16-byte aligned (gemv_applies).
enum NormMode { kNormNone, kNormInline, kNormStaged };

template <typename T, typename TO, int M, int S, int NORM, bool GLU>
__global__ void __launch_bounds__(kWarps * 32) gemv_kernel(GemvArgs<T, TO> a) {
  constexpr int R = GLU ? 2 : 1;  // weight rows a warp streams
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* xs = reinterpret_cast<T*>(smem_raw);  // kNormStaged: [M, n_in] x * g
  __shared__ float partial[kWarps][R][M];  // [warp, weight row, x row]: each slice's sums
  __shared__ float partial_ss[kWarps][M];  // kNormInline: each slice's sum of x^2
  __shared__ float scratch[32];            // block_sum
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int row = blockIdx.x * (kWarps / S) + warp / S, slice = warp % S;
  const bool active = row < a.n_out;
  const int n_in = a.n_in, n_vec = n_in / 8, per_slice = (n_vec + S - 1) / S;
  const int v_begin = slice * per_slice, v_end = min(n_vec, v_begin + per_slice);
  const uint4* w_row[R];
#pragma unroll
  for (int q = 0; q < R; ++q)
    w_row[q] = reinterpret_cast<const uint4*>(a.w + (int64_t(active ? row : 0) + q * a.n_out) * n_in);

  uint4 wv[R][kUnroll];  // the next sweep's weights, in flight
  auto load_sweep = [&](int base) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int j = base + u * 32;
#pragma unroll
      for (int q = 0; q < R; ++q) wv[q][u] = active && j < v_end ? load_stream(w_row[q] + j) : make_uint4(0, 0, 0, 0);
    }
  };
  int base = v_begin + lane;
  if (a.early_load) load_sweep(base);
  pdl_begin();
  if (!a.early_load) load_sweep(base);

  float prev[M];  // accumulate: the old output, owned by lane r
#pragma unroll
  for (int r = 0; r < M; ++r)
    prev[r] = a.accumulate && active && lane == r ? to_float(a.out[r * a.out_stride + row]) : 0.f;

  float inv_rms[M];
#pragma unroll
  for (int r = 0; r < M; ++r) inv_rms[r] = 1.f;
  if constexpr (NORM == kNormStaged) {
    float ss[M];
#pragma unroll
    for (int r = 0; r < M; ++r) ss[r] = 0.f;
    for (int v = threadIdx.x; v < n_vec; v += kWarps * 32) {
      float gf[8];
      unpack<T>(__ldg(reinterpret_cast<const uint4*>(a.norm_w) + v), gf);
#pragma unroll
      for (int r = 0; r < M; ++r) {
        float xf[8];
        unpack<T>(__ldg(reinterpret_cast<const uint4*>(a.x + r * a.x_stride) + v), xf);
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          ss[r] = fmaf(xf[i], xf[i], ss[r]);
          xf[i] *= gf[i];
        }
        store_vec<T>(xs + r * n_in + v * 8, xf);
      }
    }
#pragma unroll
    for (int r = 0; r < M; ++r)
      inv_rms[r] = 1.f / sqrtf(block_sum(ss[r], scratch) / float(n_in) + a.eps);  // as rms_norm.cu
    __syncthreads();  // xs complete (block_sum's barriers precede the last writes only for M = 1)
  }

  float acc[R][M], ss[M];  // ss: kNormInline's sum of x^2 over this slice
#pragma unroll
  for (int r = 0; r < M; ++r) {
    ss[r] = 0.f;
#pragma unroll
    for (int q = 0; q < R; ++q) acc[q][r] = 0.f;
  }
  if (active) {  // no early return: the block meets at barriers below
    for (; base < v_end; base += 32 * kUnroll) {
      uint4 cur[R][kUnroll];
#pragma unroll
      for (int q = 0; q < R; ++q)
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) cur[q][u] = wv[q][u];
      load_sweep(base + 32 * kUnroll);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int j = base + u * 32;
        if (j >= v_end) break;
        float gf[8];
        if constexpr (NORM == kNormInline) unpack<T>(__ldg(reinterpret_cast<const uint4*>(a.norm_w) + j), gf);
#pragma unroll
        for (int r = 0; r < M; ++r) {
          float xf[8];
          if constexpr (NORM == kNormStaged) {
            unpack<T>(reinterpret_cast<const uint4*>(xs + r * n_in)[j], xf);
          } else {
            unpack<T>(__ldg(reinterpret_cast<const uint4*>(a.x + r * a.x_stride) + j), xf);
          }
          if constexpr (NORM == kNormInline) {
#pragma unroll
            for (int i = 0; i < 8; ++i) {
              ss[r] = fmaf(xf[i], xf[i], ss[r]);
              xf[i] *= gf[i];
            }
          }
#pragma unroll
          for (int q = 0; q < R; ++q) {
            float wf[8];
            unpack<T>(cur[q][u], wf);
#pragma unroll
            for (int i = 0; i < 8; ++i) acc[q][r] = fmaf(wf[i], xf[i], acc[q][r]);
          }
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < M; ++r) {
#pragma unroll
    for (int q = 0; q < R; ++q) acc[q][r] = warp_sum(acc[q][r]);
    if constexpr (NORM == kNormInline) ss[r] = warp_sum(ss[r]);
  }
  if constexpr (S > 1) {
    if (lane == 0) {
#pragma unroll
      for (int r = 0; r < M; ++r) {
#pragma unroll
        for (int q = 0; q < R; ++q) partial[warp][q][r] = acc[q][r];
        if constexpr (NORM == kNormInline) partial_ss[warp][r] = ss[r];
      }
    }
    __syncthreads();
    if (slice != 0) return;
#pragma unroll
    for (int r = 0; r < M; ++r) {
      ss[r] = 0.f;
#pragma unroll
      for (int q = 0; q < R; ++q) acc[q][r] = 0.f;
#pragma unroll
      for (int s = 0; s < S; ++s) {  // fixed order: deterministic
#pragma unroll
        for (int q = 0; q < R; ++q) acc[q][r] += partial[warp + s][q][r];
        if constexpr (NORM == kNormInline) ss[r] += partial_ss[warp + s][r];
      }
    }
  }
  if constexpr (NORM == kNormInline) {
#pragma unroll
    for (int r = 0; r < M; ++r) inv_rms[r] = 1.f / sqrtf(ss[r] / float(n_in) + a.eps);  // as rms_norm.cu
  }
  if (!active) return;
  const float b = a.bias != nullptr ? to_float(a.bias[row]) : 0.f;
#pragma unroll
  for (int r = 0; r < M; ++r) {
    if (lane != r) continue;
    float y = acc[0][r] * inv_rms[r];
    if constexpr (GLU) {
      const float up = acc[R - 1][r] * inv_rms[r];
      y = y / (1.f + __expf(-y)) * up;
    }
    y += b + prev[r];
    a.out[r * a.out_stride + row] = from_float<TO>(y);
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

// SEAM_GEMV_EARLY_LOAD=0 keeps every weight load behind the PDL wait (a diagnostic switch).
bool early_load_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("SEAM_GEMV_EARLY_LOAD");
    return e == nullptr || std::string(e) != "0";
  }();
  return on;
}

template <typename T, typename TO, int M, int S, int NORM, bool GLU>
void launch_kernel_for(const GemvArgs<T, TO>& a, cudaStream_t stream) {
  const size_t smem = NORM == kNormStaged ? size_t(M) * size_t(a.n_in) * sizeof(T) : 0;
  launch_kernel(gemv_kernel<T, TO, M, S, NORM, GLU>, div_up(a.n_out, kWarps / S), kWarps * 32, smem, stream, a);
  SEAM_CUDA_CHECK_LAUNCH();
}

template <typename T, typename TO, int M, int S>
void launch_sliced(const GemvArgs<T, TO>& a, bool glu, cudaStream_t stream) {
  if (a.norm_w == nullptr) return launch_kernel_for<T, TO, M, S, kNormNone, false>(a, stream);
  if constexpr (std::is_same_v<T, TO>) {
    if (glu) return launch_kernel_for<T, TO, M, S, kNormStaged, true>(a, stream);
  }
  launch_kernel_for<T, TO, M, S, kNormInline, false>(a, stream);
}

template <typename T, typename TO, int M>
void launch_rows(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias, const GemvFusion& f,
                 cudaStream_t stream) {
  GemvArgs<T, TO> a{};
  a.out = out.ptr<TO>();
  a.out_stride = out.stride[0];
  a.x = x.ptr<T>();
  a.x_stride = x.stride[0];
  a.w = w.ptr<T>();
  a.bias = bias.defined() ? bias.ptr<T>() : nullptr;
  a.norm_w = f.norm_weight.defined() ? f.norm_weight.ptr<T>() : nullptr;
  a.eps = f.eps;
  a.accumulate = f.accumulate;
  a.early_load = early_load_enabled();
  a.n_out = int(f.silu_mul ? w.size(0) / 2 : w.size(0));
  a.n_in = int(w.size(1));
  switch (slices_for(a.n_out, a.n_in)) {
    case 1:
      return launch_sliced<T, TO, M, 1>(a, f.silu_mul, stream);
    case 2:
      return launch_sliced<T, TO, M, 2>(a, f.silu_mul, stream);
    case 4:
      return launch_sliced<T, TO, M, 4>(a, f.silu_mul, stream);
    default:
      return launch_sliced<T, TO, M, 8>(a, f.silu_mul, stream);
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

bool gemv_fusion_applies(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias,
                         const GemvFusion& f) {
  if (!gemv_applies(out, x, w, bias)) return false;
  const int64_t n_in = w.size(1);
  if (f.norm_weight.defined() &&
      !(f.norm_weight.dtype == x.dtype && f.norm_weight.contiguous() && f.norm_weight.numel() == n_in &&
        aligned16(f.norm_weight.data) && n_in * int64_t(dtype_size(x.dtype)) * kGemvMaxRows <= kGemvMaxStagedBytes))
    return false;
  if (f.accumulate && out.dtype != x.dtype) return false;
  if (f.silu_mul && !(f.norm_weight.defined() && !f.accumulate && !bias.defined() && out.dtype == x.dtype &&
                      w.size(0) % 2 == 0 && out.ndim == 2 && out.size(1) == w.size(0) / 2))
    return false;
  return true;
}

void launch_gemv(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias, const GemvFusion& f,
                 cudaStream_t stream) {
  SEAM_ASSERT(gemv_fusion_applies(out, x, w, bias, f));
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
