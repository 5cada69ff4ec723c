// Skinny GEMM: grid = one block per 16 output features; block = kWarps warps that split K.
//
// Operand layout (flash_mma.cuh has the m16n8k16 fragments). Within a 32-k chunk, lane
// (g = lane / 4, c = lane % 4) loads 8 consecutive k, [8c, 8c + 8), of weight rows g and g + 8
// and of x row 8j + g for each n-tile j: one 16-byte vector each. Its registers then hold,
// for mma step s (0, 1), the k pairs 8c + 4s + {0,1} and 8c + 4s + {2,3}, which it feeds as
// the pairs the fragment calls k 2c..2c+1 and 2c+8..2c+9. The map from fragment k to memory
// k is the same for A (weights) and B (x), and over the four lanes of a row and the two steps
// it is a permutation of the chunk's 32 k, so the dot products are exact sums of the right
// products, in a different order.
//
// Each warp streams a contiguous run of chunks (an eighth of K) of its block's 16 rows, U chunks
// of loads in flight (weights bypass L1: they are read once; x is read by every block and stays
// in L1/L2). The first weight loads go out before the PDL wait: weights never change during a run.
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/flash_mma.cuh"
#include "backend/cuda/skinny_gemm.h"

namespace seam::cuda {

namespace {

constexpr int kWarps = 8;         // K slices per block
constexpr int kFeatures = 16;     // output features per block: the mma's 16 A rows
constexpr int kChunk = 32;        // k per chunk: two m16n8k16 steps
constexpr int kVecsPerChunk = 4;  // 16-byte vectors per row per chunk (one per lane of a quad)

template <typename T, typename TO>
struct SkinnyArgs {
  TO* out;  // [m, n_out], row stride out_stride
  int64_t out_stride;
  const T* x;  // [m, n_in], row stride x_stride
  int64_t x_stride;
  const T* w;     // [n_out, n_in]
  const T* bias;  // [n_out] or null
  bool accumulate;
  int m, n_out, n_in;
};

// NT: n-tiles of 8 rows of x (m <= 8 NT). U: chunks of loads in flight per warp.
template <typename T, typename TO, int NT, int U>
__global__ void __launch_bounds__(kWarps * 32) skinny_gemm_kernel(SkinnyArgs<T, TO> a) {
  __shared__ float part[kWarps][NT * 8][kFeatures + 1];  // each warp's sums: [warp][x row][feature]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, c = lane & 3;
  const int f0 = blockIdx.x * kFeatures;
  const int n_chunks = a.n_in / kChunk;
  const int per_warp = (n_chunks + kWarps - 1) / kWarps;
  const int c_begin = min(n_chunks, warp * per_warp), c_end = min(n_chunks, c_begin + per_warp);

  // Rows past n_out read row 0 and are never written.
  const bool lo_ok = f0 + g < a.n_out, hi_ok = f0 + g + 8 < a.n_out;
  const uint4* w_lo = reinterpret_cast<const uint4*>(a.w + int64_t(lo_ok ? f0 + g : 0) * a.n_in) + c;
  const uint4* w_hi = reinterpret_cast<const uint4*>(a.w + int64_t(hi_ok ? f0 + g + 8 : 0) * a.n_in) + c;
  const uint4 zero = make_uint4(0, 0, 0, 0);

  uint4 wl[U], wh[U];
  auto load_w = [&](int ch) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const bool in = ch + u < c_end;
      wl[u] = in ? load_stream(w_lo + (ch + u) * kVecsPerChunk) : zero;
      wh[u] = in ? load_stream(w_hi + (ch + u) * kVecsPerChunk) : zero;
    }
  };
  load_w(c_begin);
  pdl_begin();  // x is the previous kernel's output

  float acc[NT][4];
#pragma unroll
  for (int j = 0; j < NT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
  for (int ch = c_begin; ch < c_end; ch += U) {
    uint4 xv[U][NT];
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const int row = 8 * j + g;
        xv[u][j] =
            ch + u < c_end && row < a.m
                ? __ldg(reinterpret_cast<const uint4*>(a.x + int64_t(row) * a.x_stride + int64_t(ch + u) * kChunk) + c)
                : zero;
      }
    uint4 cl[U], chh[U];
#pragma unroll
    for (int u = 0; u < U; ++u) cl[u] = wl[u], chh[u] = wh[u];
    if (ch + U < c_end) load_w(ch + U);  // the next group's weights in flight during this group's math
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const uint32_t a0[4] = {cl[u].x, chh[u].x, cl[u].y, chh[u].y};  // step 0: k 8c + {0..3}
      const uint32_t a1[4] = {cl[u].z, chh[u].z, cl[u].w, chh[u].w};  // step 1: k 8c + {4..7}
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        flash::mma_16816(acc[j], a0, xv[u][j].x, xv[u][j].y, T{});
        flash::mma_16816(acc[j], a1, xv[u][j].z, xv[u][j].w, T{});
      }
    }
  }

  // C fragment: acc[j][i] is feature g + 8 (i / 2) of x row 8j + 2c + (i % 2).
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int i = 0; i < 4; ++i) part[warp][8 * j + 2 * c + (i & 1)][g + 8 * (i >> 1)] = acc[j][i];
  __syncthreads();
  for (int idx = threadIdx.x; idx < a.m * kFeatures; idx += kWarps * 32) {
    const int row = idx / kFeatures, f = idx % kFeatures, feature = f0 + f;
    if (feature >= a.n_out) continue;
    float s = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) s += part[w][row][f];
    if (a.bias != nullptr) s += to_float(a.bias[feature]);
    TO* dst = a.out + int64_t(row) * a.out_stride + feature;
    if (a.accumulate) s += to_float(*dst);
    *dst = from_float<TO>(s);
  }
}

template <typename T, typename TO>
void launch_typed(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias, bool accumulate,
                  cudaStream_t stream) {
  SkinnyArgs<T, TO> a;
  a.out = static_cast<TO*>(out.data);
  a.out_stride = out.stride[0];
  a.x = static_cast<const T*>(x.data);
  a.x_stride = x.stride[0];
  a.w = static_cast<const T*>(w.data);
  a.bias = bias.defined() ? static_cast<const T*>(bias.data) : nullptr;
  a.accumulate = accumulate;
  a.m = int(x.size(0));
  a.n_out = int(w.size(0));
  a.n_in = int(w.size(1));
  const dim3 grid(div_up(a.n_out, kFeatures)), block(kWarps * 32);
  // Two n-tiles at most (kSkinnyMaxRows = 16): 4 chunks of loads in flight a warp.
  if (a.m <= 8) return launch_kernel(skinny_gemm_kernel<T, TO, 1, 4>, grid, block, 0, stream, a);
  launch_kernel(skinny_gemm_kernel<T, TO, 2, 4>, grid, block, 0, stream, a);
}

}  // namespace

bool skinny_gemm_applies(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias) {
  const bool half = x.dtype == DType::bf16 || x.dtype == DType::f16;
  const int64_t m = x.ndim == 2 ? x.size(0) : 0;
  return half && w.dtype == x.dtype && (out.dtype == x.dtype || out.dtype == DType::f32) &&
         (!bias.defined() || (bias.dtype == w.dtype && bias.contiguous())) && m >= 1 && m <= kSkinnyMaxRows &&
         w.ndim == 2 && w.contiguous() && w.size(1) % kChunk == 0 && w.size(0) < (int64_t(1) << 31) &&
         w.size(1) < (int64_t(1) << 31) && aligned16(w.data) && rows_vectorizable(x, x.size(1));
}

void launch_skinny_gemm(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias, bool accumulate,
                        cudaStream_t stream) {
  SEAM_ASSERT(skinny_gemm_applies(out, x, w, bias), "skinny_gemm: unsupported operands");
  SEAM_ASSERT(!accumulate || out.dtype == x.dtype, "skinny_gemm: accumulate needs out in x's dtype");
  if (x.dtype == DType::bf16) {
    if (out.dtype == DType::f32) return launch_typed<__nv_bfloat16, float>(out, x, w, bias, accumulate, stream);
    return launch_typed<__nv_bfloat16, __nv_bfloat16>(out, x, w, bias, accumulate, stream);
  }
  if (out.dtype == DType::f32) return launch_typed<__half, float>(out, x, w, bias, accumulate, stream);
  launch_typed<__half, __half>(out, x, w, bias, accumulate, stream);
}

}  // namespace seam::cuda
