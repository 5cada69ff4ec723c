#include "backend/cuda/fp8_gemm.h"

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/fp8_act.cuh"

namespace seam::cuda {

namespace {

constexpr int kWarps = 8;
// From this many rows the tiled kernel (below) runs; fewer: one warp per output element.
constexpr int64_t kTiledMinRows = 16;

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

// The tiled kernel for kTiledMinRows rows and more: a block computes a kTileM x kTileN tile of
// out, 256 threads each a 4 x 4 piece, over K in steps of 64 (half a block128 scale group). Each
// step stages the tile's x and w codes decoded to float in shared memory, transposed ([k][row],
// rows padded by 4 against bank conflicts on the stores) so that a thread reads its 4 rows and 4
// outputs as two float4s. The float32 sums are the definition's: for block128 the products of a
// 128-wide group summed (S of group g), scaled by xs(i, g) * ws(o, g) and added to the total;
// for per-tensor / per-channel one sum over all of K, scaled once at the end. Only the order of
// the sums differs from the reference.
constexpr int kTileM = 64, kTileN = 64, kTileK = 64, kTilePad = 4, kTileThreads = 256;
static_assert(kFp8Group % kTileK == 0, "a K step lies inside one scale group");

template <typename T>
__global__ void __launch_bounds__(kTileThreads)
    fp8_gemm_tiled_kernel(T* out, int64_t out_stride, const uint8_t* xq, const float* xs, const uint8_t* wq,
                          const float* ws, const T* bias, int64_t n_in, int64_t n_out, int w_scheme, int n_groups,
                          int64_t n_rows, bool accumulate) {
  pdl_begin();
  __shared__ __align__(16) float x_t[kTileK][kTileM + kTilePad];  // [k][row]
  __shared__ __align__(16) float w_t[kTileK][kTileN + kTilePad];  // [k][output]
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int64_t row0 = int64_t(blockIdx.y) * kTileM, col0 = int64_t(blockIdx.x) * kTileN;
  const bool grouped = w_scheme == int(Fp8WeightScheme::block128);
  float acc[4][4], part[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = part[i][j] = 0.f;
  for (int64_t k0 = 0; k0 < n_in; k0 += kTileK) {
    __syncthreads();  // the previous step's tiles are read
    // 64 rows x 64 codes each of x and w: 16 codes a thread each, coalesced along k.
    for (int e = tid; e < kTileM * kTileK; e += kTileThreads) {
      const int r = e / kTileK, k = e % kTileK;
      const int64_t gk = k0 + k, gr = row0 + r, gc = col0 + r;
      x_t[k][r] = gr < n_rows && gk < n_in ? fp8_decode(xq[gr * n_in + gk]) : 0.f;
      w_t[k][r] = gc < n_out && gk < n_in ? fp8_decode(wq[gc * n_in + gk]) : 0.f;
    }
    __syncthreads();
#pragma unroll 8
    for (int k = 0; k < kTileK; ++k) {
      const float4 a = *reinterpret_cast<const float4*>(&x_t[k][ty * 4]);
      const float4 b = *reinterpret_cast<const float4*>(&w_t[k][tx * 4]);
      const float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) part[i][j] = fmaf(av[i], bv[j], part[i][j]);
    }
    if (grouped && ((k0 + kTileK) % kFp8Group == 0 || k0 + kTileK >= n_in)) {  // S of group g: scaled in
      const int g = int(k0 / kFp8Group);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int64_t r = min(row0 + ty * 4 + i, n_rows - 1);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int64_t o = min(col0 + tx * 4 + j, n_out - 1);
          acc[i][j] += (xs[int64_t(g) * n_rows + r] * ws[o * n_groups + g]) * part[i][j];
          part[i][j] = 0.f;
        }
      }
    }
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int64_t r = row0 + ty * 4 + i;
    if (r >= n_rows) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t o = col0 + tx * 4 + j;
      if (o >= n_out) continue;
      float y = acc[i][j];
      if (!grouped) y = (xs[r] * ws[w_scheme == int(Fp8WeightScheme::per_tensor) ? 0 : o]) * part[i][j];
      if (bias) y += to_float(bias[o]);
      T* dst = out + r * out_stride + o;
      *dst = from_float<T>(accumulate ? to_float(*dst) + y : y);
    }
  }
}

}  // namespace

void launch_fp8_gemm_simt(const Tensor& out, const Tensor& codes, const Tensor& act_scales, const Fp8Weight& w,
                          const Tensor& bias, bool accumulate, cudaStream_t stream) {
  const int64_t n = out.size(0), n_out = w.w.size(0), n_in = w.w.size(1);
  if (n == 0 || n_out == 0) return;
  SEAM_ASSERT(n < kTiledMinRows || div_up(n, kTileM) <= 65535, "fp8 gemm: ", n, " rows exceed the grid's y limit");
  const bool block = w.w_scheme == Fp8WeightScheme::block128;
  const int n_groups = block ? int(div_up(n_in, kFp8Group)) : 1;
  const int64_t width = block ? kFp8Group : n_in;
  SEAM_DISPATCH_FLOAT_TYPES(out.dtype, T, "fp8 gemm", [&] {
    if (n >= kTiledMinRows) {
      launch_kernel(fp8_gemm_tiled_kernel<T>, dim3(unsigned(div_up(n_out, kTileN)), unsigned(div_up(n, kTileM))),
                    kTileThreads, 0, stream, out.ptr<T>(), out.stride[0], codes.ptr<const uint8_t>(),
                    act_scales.ptr<const float>(), w.w.ptr<const uint8_t>(), w.w_scale.ptr<const float>(),
                    bias.defined() ? bias.ptr<const T>() : static_cast<const T*>(nullptr), n_in, n_out,
                    int(w.w_scheme), n_groups, n, accumulate);
      SEAM_CUDA_CHECK_LAUNCH();
      return;
    }
    launch_kernel(fp8_gemm_simt_kernel<T>, dim3(div_up(n_out, kWarps), unsigned(n)), kWarps * 32, 0, stream,
                  out.ptr<T>(), out.stride[0], codes.ptr<const uint8_t>(), act_scales.ptr<const float>(),
                  w.w.ptr<const uint8_t>(), w.w_scale.ptr<const float>(),
                  bias.defined() ? bias.ptr<const T>() : static_cast<const T*>(nullptr), n_in, n_out,
                  int(w.w_scheme), n_groups, width, n, accumulate);
    SEAM_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace seam::cuda
