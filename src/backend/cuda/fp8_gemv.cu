// The CUDA-core FP8 GEMV (SEAM_FP8_GEMV=fma): fp8_gemv.h's kernel whose products are float32
// FMAs on the weights widened by the CUDA cores; also the launcher's public entry points for both
// kernels (the tensor-core one: fp8_gemv_mma.cu).
#include "backend/cuda/fp8_gemv.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "backend/cuda/fp8_gemv_common.cuh"

namespace seam::cuda {

namespace fp8_gemv_detail {

namespace {

constexpr int kRowsPerWarp = kPairRows;  // a warp streams one pair item's two rows side by side (x loaded once for both)
constexpr int kUnroll = 4;         // 16-byte weight vectors in flight per row per lane before any math
// x is staged as decoded codes times 2^112 and the weights are widened to float as w * 2^-112
// (below): every product is then x * w exactly, and no operand or partial sum is subnormal.
constexpr float kXPrescale = 0x1p112f;

// Two E4M3 values (the low byte first) -> float32 times 2^-112, exactly. cvt.f16x2.e4m3x2 gives
// halves; every E4M3 value is a normal half, and a normal half's 15 exponent/mantissa bits
// moved to bits 13..27 of a float are that value times 2^-112 (exponent bias 127 vs 15), a
// normal float: two integer ops per value instead of the conversion unit's cvt.f32.f16.
// (The E4M3 NaN codes 0x7f / 0xff would read as finite values; the quantizers saturate, so
// weights made by seam hold none.)
__device__ __forceinline__ void widen2(uint32_t pair, float& lo, float& hi) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(pair & 0xffffu), __NV_E4M3);
  const uint32_t h2 = uint32_t(h.x) | (uint32_t(h.y) << 16);
  lo = __uint_as_float(((h2 & 0x7fffu) << 13) | ((h2 & 0x8000u) << 16));
  hi = __uint_as_float(((h2 >> 3) & 0x0fffe000u) | (h2 & 0x80000000u));
}

// Persistent: the grid is at most the blocks resident on the GPU at once (launch_typed), and
// block b computes row tiles b, b + gridDim.x, ... (a tile: kPairsPerTile pair items, set_pair:
// 16 weight rows, or 8 GLU / RoPE items), so the prologue below (staging and quantizing x: a few microseconds) is
// paid once per block instead of once per tile. In a tile, warp w streams its pair's rows (set_pair)
// over the whole of K, lane l the 16-byte vectors l, l + 32, ... of both, kUnroll at a time
// with the next kUnroll already in flight; a row's sum is the same whichever block computes it.
// The weights never change during a run, so the first tile's first sweep goes out before
// griddepcontrol.wait (pdl_begin) and overlaps the previous kernel's tail and the prologue;
// each next tile's first sweep goes out before the current tile's epilogue.
// Prologue (after the wait): stage_x (fp8_gemv_common.cuh) stages x and its scales, then each
// staged value becomes its decoded code * 2^112 in place (at xs_pos).
// GROUPED (block128 x dynamic_group128): each 16-element piece belongs to one group g (16
// divides 128); its float sum is scaled by xs(r, g) * ws(o, g) and added to the row's total.
// Two blocks a SM (<= 128 registers), as before the tile loop: left free, ptxas gives the
// looping kernel 138..183 registers, one block a SM and half the weight loads in flight. Bound,
// rows 1..2 fit without spilling and 3..4 rows spill 2..20 bytes (sm_90a, CUDA 12).
template <typename T, int M, bool GROUPED>
__global__ void __launch_bounds__(kWarps * 32, 2) fp8_gemv_kernel(Fp8GemvArgs<T> a) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  float* xs = reinterpret_cast<float*>(smem_raw);  // [M, n_in] staged x (each row at xs_pos)
  float* sx = xs + size_t(M) * a.n_in;             // [M, n_xg] activation scales
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int n_in = a.n_in, n_vec = n_in / kChunk;

  int tile = blockIdx.x;  // < a.n_tiles: the grid is at most the tile count
  Fp8GemvTile cur;
  set_pair(a, tile * kPairsPerTile + warp, cur);
  uint4 wv[kRowsPerWarp][kUnroll];
  auto load_sweep = [&](const Fp8GemvTile& t, int base) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int j = base + u * 32;
#pragma unroll
      for (int q = 0; q < kRowsPerWarp; ++q) wv[q][u] = j < n_vec ? load_stream(t.w_row[q] + j) : make_uint4(0, 0, 0, 0);
    }
  };
  load_sweep(cur, lane);
  // Only the first sweep is in flight in registers during the prologue: the next
  // kPrefetchSweeps sweeps of the first tile are pulled into L2 meanwhile (~100 KB a block,
  // tens of MB over the GPU, within the H200's 50 MB L2).
#pragma unroll
  for (int sweep = 1; sweep <= kPrefetchSweeps; ++sweep)
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int j = lane + sweep * 32 * kUnroll + u * 32;
#pragma unroll
      for (int q = 0; q < kRowsPerWarp; ++q)
        if (j < n_vec) asm volatile("prefetch.global.L2 [%0];" ::"l"(cur.w_row[q] + j));
    }
  pdl_begin();

  // ---- prologue: stage x (normalised when fused), then decode its codes in place ----
  stage_x<T, M, GROUPED>(a, xs, sx);
  const int width = GROUPED ? 128 : n_in;
  for (int i = threadIdx.x; i < M * n_in; i += kWarps * 32) {
    const int r = i / n_in, k = i - r * n_in;  // k: a position, in the same group as its element
    xs[i] = fp8_decode(fp8_act_code(xs[i], sx[r * a.n_xg + k / width])) * kXPrescale;
  }
  __syncthreads();

  // ---- the weight stream, tile after tile (no block-wide synchronisation from here on) ----
  for (;;) {
    float acc[kRowsPerWarp][M];
#pragma unroll
    for (int q = 0; q < kRowsPerWarp; ++q)
#pragma unroll
      for (int r = 0; r < M; ++r) acc[q][r] = 0.f;
    for (int base = lane; base < n_vec; base += 32 * kUnroll) {
      uint4 w_cur[kRowsPerWarp][kUnroll];
#pragma unroll
      for (int q = 0; q < kRowsPerWarp; ++q)
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) w_cur[q][u] = wv[q][u];
      load_sweep(cur, base + 32 * kUnroll);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int j = base + u * 32;
        if (j >= n_vec) break;
        const int swz = (j >> 1) & 3;  // xs_pos: quarter h of chunk j sits at quarter h ^ swz
        float part[kRowsPerWarp][M];
#pragma unroll
        for (int q = 0; q < kRowsPerWarp; ++q)
#pragma unroll
          for (int r = 0; r < M; ++r) part[q][r] = GROUPED ? 0.f : acc[q][r];
#pragma unroll
        for (int h = 0; h < 4; ++h) {  // 4 E4M3 values per 32-bit word
          float wf[kRowsPerWarp][4];
#pragma unroll
          for (int q = 0; q < kRowsPerWarp; ++q) {
            const uint32_t word = h == 0 ? w_cur[q][u].x : h == 1 ? w_cur[q][u].y : h == 2 ? w_cur[q][u].z : w_cur[q][u].w;
            widen2(word, wf[q][0], wf[q][1]);
            widen2(word >> 16, wf[q][2], wf[q][3]);
          }
#pragma unroll
          for (int r = 0; r < M; ++r) {
            const float4 xv = reinterpret_cast<const float4*>(xs + r * n_in + j * kChunk)[h ^ swz];
#pragma unroll
            for (int q = 0; q < kRowsPerWarp; ++q) {
              part[q][r] = fmaf(xv.x, wf[q][0], part[q][r]);
              part[q][r] = fmaf(xv.y, wf[q][1], part[q][r]);
              part[q][r] = fmaf(xv.z, wf[q][2], part[q][r]);
              part[q][r] = fmaf(xv.w, wf[q][3], part[q][r]);
            }
          }
        }
#pragma unroll
        for (int q = 0; q < kRowsPerWarp; ++q)
#pragma unroll
          for (int r = 0; r < M; ++r) {
            if constexpr (GROUPED) {
              const int g = j * kChunk / 128;
              const int o = cur.active[q] ? cur.rows[q] : 0;
              acc[q][r] = fmaf(sx[r * a.n_xg + g] * a.ws[int64_t(o) * a.n_xg + g], part[q][r], acc[q][r]);
            } else {
              acc[q][r] = part[q][r];
            }
          }
      }
    }
#pragma unroll
    for (int q = 0; q < kRowsPerWarp; ++q)
#pragma unroll
      for (int r = 0; r < M; ++r) acc[q][r] = warp_sum(acc[q][r]);
    // The next tile's first sweep goes out before this tile's epilogue (wv is free: the last
    // sweep above loaded past the row).
    const int next = tile + int(gridDim.x);
    Fp8GemvTile nxt = cur;
    if (next < a.n_tiles) {
      set_pair(a, next * kPairsPerTile + warp, nxt);
      load_sweep(nxt, lane);
    }
    if (lane == 0) store_tile<T, M, GROUPED>(a, cur, acc, sx);
    if (next >= a.n_tiles) break;
    tile = next;
    cur = nxt;
  }
}

}  // namespace

// Blocks of `kernel` resident on the whole device at once with `smem` bytes of dynamic shared
// memory (its occupancy times the SMs): the persistent kernel's largest grid. Asked once per
// device, instantiation and staged size, then cached (host work only: allowed while a graph is
// being captured).
int resident_blocks(const void* kernel, size_t smem) {
  struct Entry {
    int dev;
    const void* kernel;
    size_t smem;
    int blocks;
  };
  static std::mutex mu;
  static std::vector<Entry> cache;
  int dev = 0;
  SEAM_CUDA_CHECK(cudaGetDevice(&dev));
  const std::lock_guard<std::mutex> lock(mu);
  for (const Entry& e : cache)
    if (e.dev == dev && e.kernel == kernel && e.smem == smem) return e.blocks;
  int sms = 0, per_sm = 0;
  SEAM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  SEAM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kWarps * 32, smem));
  const int blocks = std::max(1, per_sm) * std::max(1, sms);
  cache.push_back({dev, kernel, smem, blocks});
  return blocks;
}

namespace {

template <typename T, int M, bool GROUPED>
void launch_typed(const Tensor& out, const Tensor& x, const Fp8Weight& w, const Tensor& bias, bool accumulate,
                  cudaStream_t stream, const Fp8GemvFusion& f) {
  const int64_t n_out = w.w.size(0), n_in = w.w.size(1);
  const int n_xg = GROUPED ? int(div_up(n_in, kFp8Group)) : 1;
  const size_t smem = staged_bytes(M, n_in, n_xg);
  // Opt in to large dynamic shared memory once per instantiation and device (not a stream
  // operation: allowed while a graph is being captured).
  once_per_device(reinterpret_cast<const void*>(fp8_gemv_kernel<T, M, GROUPED>), [] {
    SEAM_CUDA_CHECK(cudaFuncSetAttribute(fp8_gemv_kernel<T, M, GROUPED>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         int(kFp8GemvMaxStagedBytes)));
  });
  const Fp8GemvArgs<T> a = make_args<T>(out, x, w, bias, accumulate, f, n_xg);
  // Persistent: at most one resident wave of blocks, each looping over its tiles.
  const auto kernel = fp8_gemv_kernel<T, M, GROUPED>;
  const int blocks = std::min(a.n_tiles, resident_blocks(reinterpret_cast<const void*>(kernel), smem));
  launch_kernel(kernel, dim3(unsigned(blocks)), kWarps * 32, smem, stream, a);
  SEAM_CUDA_CHECK_LAUNCH();
}

template <typename T, bool GROUPED>
void launch_rows(const Tensor& out, const Tensor& x, const Fp8Weight& w, const Tensor& bias, bool accumulate,
                 cudaStream_t stream, const Fp8GemvFusion& f) {
  switch (x.size(0)) {
    case 1: return launch_typed<T, 1, GROUPED>(out, x, w, bias, accumulate, stream, f);
    case 2: return launch_typed<T, 2, GROUPED>(out, x, w, bias, accumulate, stream, f);
    case 3: return launch_typed<T, 3, GROUPED>(out, x, w, bias, accumulate, stream, f);
    default: return launch_typed<T, 4, GROUPED>(out, x, w, bias, accumulate, stream, f);
  }
}

}  // namespace

}  // namespace fp8_gemv_detail

using namespace fp8_gemv_detail;

bool fp8_gemv_applies(const Tensor& out, const Tensor& x, const Fp8Weight& w) {
  (void)out;
  const int64_t n = x.size(0), n_in = x.size(1);
  if (n < 1 || n > kFp8GemvMaxRows || n_in % kChunk != 0) return false;
  if (reinterpret_cast<uintptr_t>(w.w.data) % 16 != 0 || w.w.size(0) > INT32_MAX || n * n_in > INT32_MAX) return false;
  const bool plain = (w.w_scheme == Fp8WeightScheme::per_tensor || w.w_scheme == Fp8WeightScheme::per_channel) &&
                     (w.act == Fp8ActScheme::dynamic_per_token || w.act == Fp8ActScheme::static_per_tensor);
  if (!plain && !grouped_pair(w)) return false;
  const int64_t n_xg = grouped_pair(w) ? (n_in + kFp8Group - 1) / kFp8Group : 1;
  return staged_bytes(n, n_in, n_xg) <= size_t(kFp8GemvMaxStagedBytes);
}

bool fp8_gemv_fusion_applies(const Tensor& out, const Tensor& x, const Fp8Weight& w, const Fp8GemvFusion& f) {
  if (!fp8_gemv_applies(out, x, w)) return false;
  if (f.norm_weight.defined() &&
      (f.norm_weight.dtype != x.dtype || f.norm_weight.numel() != x.size(1) || !f.norm_weight.contiguous()))
    return false;
  if (f.glu && !(w.w.size(0) % 2 == 0 && out.size(1) == w.w.size(0) / 2)) return false;
  if (f.rope_store) {
    const RopeStoreArgs& r = f.rope;
    const Tensor &kc = r.k_cache, &vc = r.v_cache;
    const bool caches = kc.ndim == 3 && vc.ndim == 3 && kc.contiguous() && vc.contiguous() && kc.dtype == vc.dtype &&
                        (kc.dtype == x.dtype || kc.dtype == DType::fp8_e4m3) && kc.size(0) == vc.size(0) &&
                        kc.size(1) == vc.size(1) && kc.size(2) == vc.size(2);
    if (f.glu || !caches || out.dtype != x.dtype || r.n_heads < 1) return false;
    const int64_t d = kc.size(2), rh = r.inv_freq.defined() ? r.inv_freq.size(0) : 0;
    if (d % 2 != 0 || w.w.size(0) != (r.n_heads + 2 * kc.size(1)) * d || out.size(1) != w.w.size(0)) return false;
    if (rh < 1 || 2 * rh > d || (r.inv_freq_long.defined() && r.inv_freq_long.size(0) != rh)) return false;
    for (const Tensor* lo : {&r.inv_freq_lo, &r.inv_freq_long_lo})
      if (lo->defined() && lo->size(0) != rh) return false;
    if (!r.positions.defined() || r.positions.numel() < x.size(0) || !r.slots.defined() ||
        r.slots.numel() < x.size(0))
      return false;
  }
  return true;
}

void launch_fp8_gemv(const Tensor& out, const Tensor& x, const Fp8Weight& w, const Tensor& bias, bool accumulate,
                     cudaStream_t stream, const Fp8GemvFusion& f, Fp8GemvKernel kernel) {
  SEAM_ASSERT(fp8_gemv_fusion_applies(out, x, w, f), "launch_fp8_gemv: shape or scheme outside fp8_gemv_applies");
  SEAM_ASSERT(!f.glu || (!bias.defined() && !accumulate), "launch_fp8_gemv: the GLU fusion takes no bias or accumulate");
  SEAM_ASSERT(!f.rope_store || !accumulate, "launch_fp8_gemv: the RoPE fusion takes no accumulate");
  if (w.w.size(0) == 0) return;
  SEAM_DISPATCH_FLOAT_TYPES(x.dtype, T, "fp8 gemv", [&] {
    // Every shape and fusion fp8_gemv_fusion_applies takes runs on either kernel (the tensor-core
    // loop masks K past the last whole 64 with zero operands): no case is routed between them here.
    const bool mma = kernel == Fp8GemvKernel::mma;
    if (grouped_pair(w)) mma ? launch_mma_rows<T, true>(out, x, w, bias, accumulate, stream, f)
                             : launch_rows<T, true>(out, x, w, bias, accumulate, stream, f);
    else mma ? launch_mma_rows<T, false>(out, x, w, bias, accumulate, stream, f)
             : launch_rows<T, false>(out, x, w, bias, accumulate, stream, f);
  });
}

}  // namespace seam::cuda
