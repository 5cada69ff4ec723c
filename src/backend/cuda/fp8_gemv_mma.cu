// The tensor-core FP8 GEMV (SEAM_FP8_GEMV=mma, fp8_gemv.h): the weight rows as mma.sync's A
// operand (m16n8k32, E4M3, fp8_mma.cuh), x's E4M3 codes as B. The prologue (stage_x) and the
// epilogue (store_tile) are fp8_gemv.cu's (fp8_gemv_common.cuh); only the inner loop differs.
//
// Work split. A row tile is 8 pair items (set_pair), 16 weight rows: pair g is A's rows g (its
// first row) and g + 8 (its second), so lane group g = lane / 4 loads its pair's two rows and the
// four lanes t = lane % 4 of the group take 16 bytes each, 64 k a step. A lane's 16-byte vector of
// row g (bytes 0..7: a0 | a2 of the first mma, bytes 8..15: of the second) and of row g + 8
// (a1 | a3) feeds two mmas with no shuffle; its B (b0 | b1 of each) is the same 16 k of x row g
// (B's column g: activation row g < M, zero columns past M), one 16-byte shared load. The k a
// fragment position stands for depends on t only, so every row's products pair the same k. One warp over a tile's 16 rows x K is too little parallelism for the
// GPU (Llama-3.1-8B's o_proj: 256 tiles, 2,112 resident warps), so the block's 8 warps split K:
// warp w takes 128-wide groups [w G / 8, (w + 1) G / 8) of the G = ceil(K / 128), and the 8 partial
// sums are added through shared memory in warp order (a fixed order: the same result whichever
// block computes the tile).
//
// Bytes in flight (U = 4 steps, reloaded a sweep at a time): a lane holds U steps of both rows
// (128 bytes) and loads the next 4 before the products of these, so ~4 KB a warp, ~64 KB a SM at
// two blocks (>= the ~32 KB a SM Little's law asks for ~4 TB/s at HBM3e latency). Split K over
// 2 / 4 blocks, 2 or 8 vectors in flight, a rolling reload and a deeper L2 prefetch were each
// measured slower or no faster (docs/performance.md, sixteenth pass) and removed. Per 16 weight bytes a lane issues one 16-byte
// global load, one mma and half a 16-byte shared load, against the CUDA-core loop's 8 cvt, 16
// integer ops and 16 M FMAs.
//
// Promotion: the tensor core's accumulator restarts every 128 k (two steps: four mmas, its
// 128-k sum of exact products) and is added into float32 registers, times the group's
// activation and weight scales under block128 x dynamic_group128 (as fp8_gemv.cu scales its
// 16-element pieces); per-tensor / per-channel scales apply once, in store_tile.
// x in shared memory: E4M3 codes, row r at r * code_stride(K) (K rounded up to 128, plus 64:
// rows r and r + 1 read by one quarter-warp fall in opposite halves of the 32 banks). The codes
// are fp8_gemv.cu's (the same fp8_act_code of the same staged values): bit-identical with the CPU.
#include <mutex>
#include <vector>

#include "backend/cuda/diagnostic_switch.h"
#include "backend/cuda/fp8_gemv_common.cuh"
#include "backend/cuda/fp8_gemv_probe.cuh"
#include "backend/cuda/fp8_mma.cuh"

namespace seam::cuda::fp8_gemv_detail {

namespace {

constexpr int kStepK = 64;        // k a lane group covers per step (4 lanes x 16 bytes)
constexpr int kGroupK = 128;      // the promotion interval (and the activation / weight scale group)
constexpr int kCodeBatch = 8;     // staged values a thread turns into codes per in-place pass
constexpr int U = 4;              // 16-byte vectors per row per lane in flight (a sweep)
// Steps of the first tile pulled into L2 before the prologue: the kPrefetchSweeps sweeps of 4 the
// loop was first measured with, after the first sweep held in registers.
constexpr int kPrefetchSteps = (1 + kPrefetchSweeps) * U;

__host__ __device__ constexpr int code_stride(int n_in) { return (n_in + kGroupK - 1) / kGroupK * kGroupK + 64; }
__host__ __device__ constexpr size_t align16(size_t n) { return (n + 15) / 16 * 16; }
// Two prologues, two shared-memory layouts (the scales [M, n_xg] after either):
//  * stage_codes_vec (2-byte x in 16-byte rows, a.x_vec): the codes [M, code_stride], then the
//    staged rows [M, n_in] in T;
//  * otherwise stage_x's floats [M, n_in] and, over them in place, the codes: the larger of the two.
__host__ __device__ constexpr size_t codes_bytes(int m, int n_in) { return align16(size_t(m) * size_t(code_stride(n_in))); }
__host__ __device__ constexpr size_t scales_at(int m, int n_in, bool vec_codes) {
  return vec_codes ? codes_bytes(m, n_in) + align16(size_t(m) * size_t(n_in) * 2)
                   : align16(std::max(size_t(m) * size_t(n_in) * 4, size_t(m) * size_t(code_stride(n_in))));
}
// Whether a launch takes stage_codes_vec's prologue (and its layout): the kernel and its launcher
// both ask this.
template <typename T>
__host__ __device__ constexpr bool uses_vec_codes(const Fp8GemvArgs<T>& a) {
  return sizeof(T) == 2 && a.x_vec;
}
size_t mma_smem_bytes(int m, int n_in, int n_xg, bool vec_codes) {
  return scales_at(m, n_in, vec_codes) + size_t(m) * size_t(n_xg) * 4;
}

// The prologue for 2-byte x in 16-byte rows: stage_x_vec's values (normed where fused) kept as
// whole T vectors in shared memory (xt) and their amax, the scales, then each thread turns its
// own vectors into 8 codes and one 8-byte store. The codes and scales are stage_x's and the
// codes loop's below (the same values, fp8_act_code under the same scale), without that loop's
// per-element index arithmetic and byte stores: the seam_fp8_gemv_probe trace of the
// eighteenth pass had that loop at 4.0 us for K = 4,096 and 13.8 us for K = 14,336 in every
// block (each block codes all of x), the largest part of the GEMV's fixed cost.
// GROUPED: a group's 128 elements are 16 consecutive vectors, the vectors of one half-warp in a
// pass (c = c0 + lane, c0 a multiple of 32), so its amax is a 16-lane shuffle max; the warp's
// trip count is uniform (lanes past the row hold zeros). Ends synchronised.
template <typename T, int M, bool GROUPED>
__device__ __forceinline__ void stage_codes_vec(const Fp8GemvArgs<T>& a, uint8_t* xq, T* xt, float* sx) {
  constexpr int kV = kVec<T>;
  static_assert(kV == 8, "2-byte activations: 8 a vector, 8 codes a store");
  __shared__ float scratch[32];  // block_sum
  const int n_in = a.n_in, n_vec = n_in / kV, stride = code_stride(n_in);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float amax[M];
  stage_x_vec<T, M>(a, amax, scratch, [&](int r, int c, const float(&v)[kV]) {
    uint4 raw;
    T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
    for (int k = 0; k < kV; ++k) e[k] = from_float<T>(v[k]);  // exact: v holds T values
    reinterpret_cast<uint4*>(xt + size_t(r) * n_in)[c] = raw;
  });
  row_scales<T, M, GROUPED>(a, amax, sx);  // GROUPED: per group, below
  __syncthreads();
#pragma unroll
  for (int r = 0; r < M; ++r)
    for (int c0 = warp * 32; c0 < n_vec; c0 += kWarps * 32) {
      const int c = c0 + lane;
      const bool valid = c < n_vec;
      float v[kV];
      if (valid) {
        const uint4 raw = reinterpret_cast<const uint4*>(xt + size_t(r) * n_in)[c];
        const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
        for (int k = 0; k < kV; ++k) v[k] = to_float(e[k]);
      } else {
#pragma unroll
        for (int k = 0; k < kV; ++k) v[k] = 0.f;
      }
      float sc;
      if constexpr (GROUPED) {
        float ga = 0.f;
#pragma unroll
        for (int k = 0; k < kV; ++k) ga = fmaxf(ga, fabsf(v[k]));
#pragma unroll
        for (int o = 8; o > 0; o >>= 1) ga = fmaxf(ga, __shfl_xor_sync(0xffffffffu, ga, o));
        sc = fp8_act_scale(ga, a.ub);
        if ((lane & 15) == 0 && valid) sx[r * a.n_xg + c / 16] = sc;
      } else {
        sc = sx[r];
      }
      if (valid) {
        uint32_t lo = 0, hi = 0;
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          lo |= uint32_t(fp8_act_code(v[k], sc)) << (8 * k);
          hi |= uint32_t(fp8_act_code(v[k + 4], sc)) << (8 * k);
        }
        *reinterpret_cast<uint2*>(xq + r * stride + c * kV) = make_uint2(lo, hi);
      }
    }
  __syncthreads();
}

// Persistent as fp8_gemv.cu's kernel (a grid of at most one resident wave, block b computing row
// tiles b, b + gridDim.x, ...; the first sweep and L2 prefetches before pdl_begin; each next
// tile's first sweep before the current tile's epilogue), the same two blocks a SM.
template <typename T, int M, bool GROUPED>
__global__ void __launch_bounds__(kWarps * 32, 2) fp8_gemv_mma_kernel(Fp8GemvArgs<T> a) {
  static_assert(U % 2 == 0, "a step group is one 128-wide group: two steps");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int n_in = a.n_in, stride = code_stride(n_in);
  const bool vec_codes = uses_vec_codes(a);
  uint8_t* xq = smem_raw;                          // [M, stride] x's codes
  float* xs = reinterpret_cast<float*>(smem_raw);  // stage_x: [M, n_in] staged x, the codes then over it
  float* sx = reinterpret_cast<float*>(smem_raw + scales_at(M, n_in, vec_codes));  // [M, n_xg]
  // The warps' partial sums of a tile (lanes t < 2 hold the M <= 4 columns), double-buffered by
  // the tile's parity so one barrier a tile suffices: a buffer is written again two tiles later,
  // after every thread has passed the next tile's barrier, i.e. finished reading it.
  __shared__ float4 part[2][kWarps][8][2];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const int n_groups = (n_in + kGroupK - 1) / kGroupK;
  // Warp w takes 128-wide groups [w G / 8, (w + 1) G / 8) of every tile (the same slice for each).
  struct Slice {
    int g_begin, k_begin, n_steps;
  };
  Slice sl;
  sl.g_begin = warp * n_groups / kWarps;
  sl.k_begin = sl.g_begin * kGroupK;
  sl.n_steps = ((warp + 1) * n_groups / kWarps - sl.g_begin) * (kGroupK / kStepK);

  probe_mark(a, kProbeEntry);
  int tile = blockIdx.x;  // < a.n_tiles: the grid is at most the tile count
  Fp8GemvTile cur;
  set_pair(a, tile * kPairsPerTile + g, cur);
  uint4 wv[kPairRows][U];
  // Step s of this lane's slice (zeros past the slice or K: no load).
  auto load_step = [&](const Fp8GemvTile& p, const Slice& c, int s, int q) {
    const int k = c.k_begin + s * kStepK + t * kChunk;
    return s < c.n_steps && k < n_in ? load_stream(p.w_row[q] + k / kChunk) : make_uint4(0, 0, 0, 0);
  };
  auto load_sweep = [&](const Fp8GemvTile& p, const Slice& c, int s0) {
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int q = 0; q < kPairRows; ++q) wv[q][u] = load_step(p, c, s0 + u, q);
  };
  load_sweep(cur, sl, 0);
  // Steps U .. kPrefetchSteps - 1 of the first tile pulled into L2 meanwhile. A step pair (s, s + 1)
  // covers a 128-byte window of each row; by default (prefetch_lines) lane t = 0 prefetches its
  // first byte and t = 1 its last 16, one or two lines, where every lane once prefetched its own
  // 16 bytes (a.prefetch_lines false: SEAM_FP8_GEMV_PREFETCH=0): 8 prefetches a line, ~0.5 M
  // prefetch instructions a launch for Llama-3.1-8B's o_proj and ~1.6 M for its down_proj, all
  // before the first weight byte is used.
  if (a.prefetch_lines) {
    for (int s = U; s < kPrefetchSteps && s < sl.n_steps; s += 2) {
      const int k = sl.k_begin + s * kStepK + (t == 0 ? 0 : 2 * kStepK - kChunk);
#pragma unroll
      for (int q = 0; q < kPairRows; ++q)
        if (t < 2 && k < n_in) asm volatile("prefetch.global.L2 [%0];" ::"l"(cur.w_row[q] + k / kChunk));
    }
  } else {
    for (int s = U; s < kPrefetchSteps && s < sl.n_steps; ++s) {
      const int k = sl.k_begin + s * kStepK + t * kChunk;
#pragma unroll
      for (int q = 0; q < kPairRows; ++q)
        if (k < n_in) asm volatile("prefetch.global.L2 [%0];" ::"l"(cur.w_row[q] + k / kChunk));
    }
  }
  pdl_begin();
  probe_mark(a, kProbeWaited);

  // ---- prologue: x's codes and scales in shared memory ----
  if constexpr (sizeof(T) == 2)
    if (vec_codes) {
      stage_codes_vec<T, M, GROUPED>(a, xq, reinterpret_cast<T*>(smem_raw + codes_bytes(M, n_in)), sx);
      probe_mark(a, kProbeStaged);
    }
  if (!vec_codes) {
  // stage x, then its codes over it in place
  stage_x<T, M, GROUPED>(a, xs, sx);
  probe_mark(a, kProbeStaged);
  // Pass c reads the floats at positions [c B, (c + 1) B) (B = kCodeBatch * 256), then, after a
  // barrier, writes their codes at r * stride + k <= i + 3 * 192 bytes for position i < (c + 1) B:
  // below byte 4 (c + 1) B, so into floats of passes <= c, all read before that barrier.
  const int width = GROUPED ? kGroupK : n_in, total = M * n_in;
  for (int base = 0; base < total; base += kCodeBatch * kWarps * 32) {
    uint8_t code[kCodeBatch];
    int dst[kCodeBatch];
#pragma unroll
    for (int b = 0; b < kCodeBatch; ++b) {
      const int i = base + b * kWarps * 32 + int(threadIdx.x);
      dst[b] = -1;
      if (i < total) {
        const int r = i / n_in, pos = i - r * n_in, k = xs_pos(pos);  // xs_pos: an involution
        code[b] = fp8_act_code(xs[i], sx[r * a.n_xg + pos / width]);
        dst[b] = r * stride + k;
      }
    }
    __syncthreads();
#pragma unroll
    for (int b = 0; b < kCodeBatch; ++b)
      if (dst[b] >= 0) xq[dst[b]] = code[b];
  }
  __syncthreads();
  }  // stage_x's prologue
  probe_mark(a, kProbeCoded);
  int probe_tiles = 0;

  // ---- the weight stream, tile after tile ----
  const uint8_t* xrow = xq + (g < M ? g : 0) * stride;  // B's column g: activation row g
  int par = 0;
  // Lane 0 of warp p runs the epilogue of the tile's pair p: its global inputs pulled into L1
  // now, a stream ahead (each next tile's with that tile's first sweep, below).
  auto prefetch_mine = [&](int t_idx) {
    if (lane != 0) return;
    Fp8GemvTile mine;
    set_pair(a, t_idx * kPairsPerTile + warp, mine);
    prefetch_epilogue<T, M, GROUPED>(a, mine);
  };
  prefetch_mine(tile);
  for (;;) {
    float acc[4] = {0.f, 0.f, 0.f, 0.f};  // C: (row g, cols 2t, 2t + 1), (row g + 8, cols 2t, 2t + 1)
    // The weight scales of the pair's rows (GROUPED: per group, read at the promotion).
    const int o0 = cur.active[0] ? cur.rows[0] : 0, o1 = cur.active[1] ? cur.rows[1] : 0;
    for (int s0 = 0; s0 < sl.n_steps; s0 += U) {
      // A sweep: these U steps copied, the next U loaded now.
      uint4 w_cur[kPairRows][U];
#pragma unroll
      for (int q = 0; q < kPairRows; ++q)
#pragma unroll
        for (int u = 0; u < U; ++u) w_cur[q][u] = wv[q][u];
      load_sweep(cur, sl, s0 + U);
#pragma unroll
      for (int h = 0; h < U / 2; ++h) {  // one 128-wide group: two steps, four mmas
        const int s = s0 + 2 * h;
        if (s >= sl.n_steps) break;  // n_steps is even: a group is whole or absent
        float d[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int u = 2 * h + e, k = sl.k_begin + (s + e) * kStepK + t * kChunk;
          uint4 xv = make_uint4(0, 0, 0, 0);  // zero columns past M, and zero k past K (its codes unwritten)
          if (g < M && k < n_in) xv = *reinterpret_cast<const uint4*>(xrow + k);
          const uint4 w0 = w_cur[0][u], w1 = w_cur[1][u];
          const uint32_t lo[4] = {w0.x, w1.x, w0.y, w1.y};
          mma_e4m3_16832(d, lo, xv.x, xv.y);
          const uint32_t hi[4] = {w0.z, w1.z, w0.w, w1.w};
          mma_e4m3_16832(d, hi, xv.z, xv.w);
        }
        if constexpr (GROUPED) {
          const int grp = sl.g_begin + s / 2;
          const float w0 = a.ws[int64_t(o0) * a.n_xg + grp], w1 = a.ws[int64_t(o1) * a.n_xg + grp];
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const int col = 2 * t + (i & 1);
            if (col < M) acc[i] = fmaf(sx[col * a.n_xg + grp] * (i < 2 ? w0 : w1), d[i], acc[i]);
          }
        } else {
#pragma unroll
          for (int i = 0; i < 4; ++i) acc[i] += d[i];
        }
      }
      if (probe_tiles == 0 && s0 == 0) probe_mark(a, kProbeFirstSweep, acc[0]);
    }
    // The next tile's first sweep goes out before this tile's reduction and epilogue (wv is
    // free: the last loads above were past the slice).
    const int next = tile + int(gridDim.x);
    Fp8GemvTile nxt = cur;
    if (next < a.n_tiles) {
      set_pair(a, next * kPairsPerTile + g, nxt);
      load_sweep(nxt, sl, 0);
      prefetch_mine(next);
    }
    if (t < 2) part[par][warp][g][t] = make_float4(acc[0], acc[1], acc[2], acc[3]);
    __syncthreads();
    if (probe_tiles == 0) probe_mark(a, kProbeStreamed);
    // Warp p finishes pair p of the tile: lane q M + r adds row q, column r over the warps in
    // order, lane 0 gathers them and runs the epilogue.
    float v = 0.f;
    if (lane < kPairRows * M) {
      const int q = lane / M, r = lane % M;
      for (int w = 0; w < kWarps; ++w) {
        const float4 p = part[par][w][warp][r >> 1];
        const int i = 2 * q + (r & 1);  // C's register (selected, not indexed: no local memory)
        v += i == 0 ? p.x : i == 1 ? p.y : i == 2 ? p.z : p.w;
      }
    }
    float y[kPairRows][M];
#pragma unroll
    for (int q = 0; q < kPairRows; ++q)
#pragma unroll
      for (int r = 0; r < M; ++r) y[q][r] = __shfl_sync(0xffffffffu, v, q * M + r);
    if (lane == 0) {
      Fp8GemvTile mine;
      set_pair(a, tile * kPairsPerTile + warp, mine);
      store_tile<T, M, GROUPED>(a, mine, y, sx);
    }
    if (probe_tiles++ == 0) probe_mark(a, kProbeStored, y[0][0]);
    if (next >= a.n_tiles) break;
    tile = next;
    cur = nxt;
    par ^= 1;
  }
  probe_finish(a, probe_tiles);
}

template <typename T, int M, bool GROUPED>
void launch_mma_typed(const Tensor& out, const Tensor& x, const Fp8Weight& w, const Tensor& bias, bool accumulate,
                      cudaStream_t stream, const Fp8GemvFusion& f) {
  const int64_t n_in = w.w.size(1);
  const int n_xg = GROUPED ? int(div_up(n_in, kFp8Group)) : 1;
  Fp8GemvArgs<T> a = make_args<T>(out, x, w, bias, accumulate, f, n_xg);
  static const bool lines = env_choice("SEAM_FP8_GEMV_PREFETCH", 1, {0, 1}) == 1;  // a diagnostic switch
  a.prefetch_lines = lines;
#ifdef SEAM_FP8_GEMV_PROBE
  a.probe_slot = fp8_gemv_probe_slot();
#endif
  const bool vec_codes = uses_vec_codes(a);
  const size_t smem = mma_smem_bytes(M, int(n_in), n_xg, vec_codes);
  // Either layout exceeds fp8_gemv_applies' staged bytes (4 (n_in + n_xg) a row) only for
  // K < 192 and then by at most 192 bytes a row (the codes' padding): the opt-in below leaves
  // room for that.
  constexpr int kMaxSmem = int(kFp8GemvMaxStagedBytes) + 1024;
  SEAM_ASSERT(smem <= size_t(kMaxSmem), "fp8 gemv mma: staged x past its shared memory");
  const auto kernel = fp8_gemv_mma_kernel<T, M, GROUPED>;
  once_per_device(reinterpret_cast<const void*>(kernel), [&] {
    SEAM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSmem));
  });
  const int resident = resident_blocks(reinterpret_cast<const void*>(kernel), smem);
  const int blocks = std::min(a.n_tiles, resident);
  launch_kernel(kernel, dim3(unsigned(blocks)), kWarps * 32, smem, stream, a);
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace

#ifdef SEAM_FP8_GEMV_PROBE
namespace {
int g_probe_host_slot = 0;  // the slot launch_mma_typed gives the next launches
}
void fp8_gemv_probe_set_slot(int slot) {
  SEAM_ASSERT(slot >= 0 && slot < kProbeSlots, "fp8 gemv probe: slot out of range");
  g_probe_host_slot = slot;
}
int fp8_gemv_probe_slot() { return g_probe_host_slot; }
void fp8_gemv_probe_read(std::vector<unsigned long long>& ns, std::vector<unsigned long long>& clk) {
  ns.assign(size_t(kProbeSlots) * kProbeBlocks * kProbePhases, 0);
  clk.assign(ns.size(), 0);
  SEAM_CUDA_CHECK(cudaMemcpyFromSymbol(ns.data(), g_probe_ns, ns.size() * 8));
  SEAM_CUDA_CHECK(cudaMemcpyFromSymbol(clk.data(), g_probe_clk, clk.size() * 8));
}
void fp8_gemv_probe_clear() {
  static const std::vector<unsigned long long> zero(size_t(kProbeSlots) * kProbeBlocks * kProbePhases, 0);
  SEAM_CUDA_CHECK(cudaMemcpyToSymbol(g_probe_ns, zero.data(), zero.size() * 8));
  SEAM_CUDA_CHECK(cudaMemcpyToSymbol(g_probe_clk, zero.data(), zero.size() * 8));
}
#endif

template <typename T, bool GROUPED>
void launch_mma_rows(const Tensor& out, const Tensor& x, const Fp8Weight& w, const Tensor& bias, bool accumulate,
                     cudaStream_t stream, const Fp8GemvFusion& f) {
  switch (x.size(0)) {
    case 1: return launch_mma_typed<T, 1, GROUPED>(out, x, w, bias, accumulate, stream, f);
    case 2: return launch_mma_typed<T, 2, GROUPED>(out, x, w, bias, accumulate, stream, f);
    case 3: return launch_mma_typed<T, 3, GROUPED>(out, x, w, bias, accumulate, stream, f);
    default: return launch_mma_typed<T, 4, GROUPED>(out, x, w, bias, accumulate, stream, f);
  }
}

#define SEAM_FP8_GEMV_MMA_ROWS(T)                                                                                    \
  template void launch_mma_rows<T, true>(const Tensor&, const Tensor&, const Fp8Weight&, const Tensor&, bool,       \
                                         cudaStream_t, const Fp8GemvFusion&);              \
  template void launch_mma_rows<T, false>(const Tensor&, const Tensor&, const Fp8Weight&, const Tensor&, bool,      \
                                          cudaStream_t, const Fp8GemvFusion&);
SEAM_FP8_GEMV_MMA_ROWS(float)
SEAM_FP8_GEMV_MMA_ROWS(__half)
SEAM_FP8_GEMV_MMA_ROWS(__nv_bfloat16)
#undef SEAM_FP8_GEMV_MMA_ROWS

}  // namespace seam::cuda::fp8_gemv_detail
