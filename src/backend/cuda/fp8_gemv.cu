#include "backend/cuda/fp8_gemv.h"

#include <cuda_fp8.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "backend/cuda/activation.cuh"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/fp8_act.cuh"

namespace seam::cuda {

namespace {

constexpr int kWarps = 8;          // per block
constexpr int kRowsPerWarp = 2;    // weight rows a warp streams side by side (x loaded once for both)
constexpr int kRowsPerBlock = kWarps * kRowsPerWarp;
constexpr int kUnroll = 4;         // 16-byte weight vectors in flight per row per lane before any math
constexpr int kChunk = 16;         // E4M3 values per 16-byte vector
constexpr int kPrefetchSweeps = 3; // sweeps pulled into L2 while the prologue runs
// x is staged as decoded codes times 2^112 and the weights are widened to float as w * 2^-112
// (below): every product is then x * w exactly, and no operand or partial sum is subnormal.
constexpr float kXPrescale = 0x1p112f;

template <typename T>
struct Fp8GemvArgs {
  T* out;                    // [M, n_out], row stride out_stride
  int64_t out_stride;
  const T* x;                // [M, n_in], row stride x_stride
  int64_t x_stride;
  const uint8_t* w;          // [n_out, n_in] E4M3, 16-byte aligned rows
  const float* ws;           // by w_scheme (backend.h)
  const T* bias;             // [n_out] or null
  const float* input_scale;  // static activations: [1]
  float ub;                  // dynamic amax clamp (> 0) or 0
  int n_out, n_in;           // n_out: the warps' items (weight rows; GLU: features, half the rows)
  int n_tiles;               // row tiles: div_up(n_out, kRowsPerBlock), GLU / RoPE div_up(n_out, kWarps)
  int n_xg;                  // activation scale groups per row: ceil(n_in / 128) grouped, else 1
  int w_scheme, act;
  bool accumulate;
  const T* norm_w;           // defined: x is rms_norm(x) * norm_w (Fp8GemvFusion)
  float eps;
  int norm_vec;              // the elements per load of rms_norm.cu's sum of squares (its V)
  bool glu;                  // Fp8GemvFusion::glu
  bool gelu;                 // GLU: gelu_tanh instead of silu
  // Fp8GemvFusion::rope_store: w is [q | k | v] heads of head_dim; n_out counts rotary pairs.
  bool rope;
  const int32_t* positions;     // [M]
  RopeAngles angles;            // the rotary tables (rope_angle.h; the long one from long_from on)
  int rot_half;                 // rotary_dim / 2 (<= head_dim / 2)
  void* k_cache;                // [n_slots, n_kv_heads, head_dim] in T, or E4M3 codes (kv_fp8)
  void* v_cache;
  bool kv_fp8;
  float k_scale, v_scale;       // kv_fp8: stored = e4m3(x / scale)
  const int32_t* slots;         // [M]
  int64_t n_slots;
  int n_heads, n_kv_heads, head_dim;
};

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

// Shared-memory position of x's element k within its staged row. The stream reads 16-element
// chunk j (lane j mod 32) as four float4 quarters; stored plainly, the 8 lanes of a quarter-warp
// sit 64 bytes apart and hit 2 distinct bank quads (a 4-way conflict on every x read, one
// per 16 weight bytes per row). The quarters of chunk j are therefore stored XOR-ed by
// (j >> 1) & 3, which sends those 8 lanes to 8 distinct quads. A permutation within each
// 16-element chunk (an involution): rows and 128-wide groups keep their elements, and the
// values and the order of the products are unchanged; only where they sit in shared memory.
__device__ __forceinline__ int xs_pos(int k) { return k ^ (((k >> 5) & 3) << 2); }

// A warp's share of one row tile: the weight rows it streams and where they are.
struct Fp8GemvTile {
  int pair_item;  // GLU / RoPE: the warp's item (a pair of rows)
  int rows[kRowsPerWarp];
  bool active[kRowsPerWarp];
  const uint4* w_row[kRowsPerWarp];
};

// Tile `tile`, warp `warp`: plain, rows tile * 16 + 2 warp and + 1 (two consecutive rows a
// warp); GLU, feature tile * 8 + warp's gate row j and up row n_out + j; RoPE, a head's d / 2
// items, first its rot_half rotary pairs (i, i + rot_half), then its pass-through dims paired
// the same way within [2 rot_half, d) (gemv.cu's order).
template <typename T>
__device__ __forceinline__ void set_tile(const Fp8GemvArgs<T>& a, int tile, int warp, Fp8GemvTile& t) {
  t.pair_item = tile * kWarps + warp;
#pragma unroll
  for (int q = 0; q < kRowsPerWarp; ++q) {
    const int item = a.glu || a.rope ? t.pair_item : tile * kRowsPerBlock + warp * kRowsPerWarp + q;
    t.active[q] = item < a.n_out;
    if (a.rope) {
      const int half = a.head_dim / 2, rh = a.rot_half, i = item % half, head0 = (item / half) * a.head_dim;
      t.rows[q] = (i < rh ? head0 + i : head0 + rh + i) + q * (i < rh ? rh : half - rh);
    } else {
      t.rows[q] = a.glu ? item + q * a.n_out : item;
    }
    // An inactive row streams row 0 (valid memory); its result is never stored.
    t.w_row[q] = reinterpret_cast<const uint4*>(a.w + int64_t(t.active[q] ? t.rows[q] : 0) * a.n_in);
  }
}

// The epilogue of one tile (lane 0 of the warp, acc already summed over the lanes): scales,
// bias, accumulate, and the GLU or RoPE + KV-store fusion.
template <typename T, int M, bool GROUPED>
__device__ __forceinline__ void store_tile(const Fp8GemvArgs<T>& a, const Fp8GemvTile& t,
                                           const float (&acc)[kRowsPerWarp][M], const float* sx) {
  float y[kRowsPerWarp][M];
#pragma unroll
  for (int q = 0; q < kRowsPerWarp; ++q) {
    const int o = t.active[q] ? t.rows[q] : 0;
#pragma unroll
    for (int r = 0; r < M; ++r) {
      y[q][r] = acc[q][r];
      if constexpr (!GROUPED) {
        const float ws = a.w_scheme == int(Fp8WeightScheme::per_tensor) ? a.ws[0] : a.ws[o];
        y[q][r] = (sx[r] * ws) * y[q][r];
      }
      if (a.bias) y[q][r] += to_float(a.bias[o]);
    }
  }
  if (a.rope) {  // rope_store_kv's arithmetic (rope.cu) on the rounded products, then the KV store
    if (!t.active[0]) return;
    const int d = a.head_dim, half = d / 2, head = t.pair_item / half, i = t.pair_item % half;
    const int e0 = t.rows[0] - head * d, e1 = t.rows[1] - head * d;  // the pair's dims within the head
#pragma unroll
    for (int r = 0; r < M; ++r) {
      float v[2] = {to_float(from_float<T>(y[0][r])), to_float(from_float<T>(y[1][r]))};
      if (head < a.n_heads + a.n_kv_heads && i < a.rot_half) {  // q or k, a rotary pair: rotate it
        float sn, cs;
        sincosf(a.angles.angle(a.positions[r], i), &sn, &cs);  // as rope_kernel
        const float x0 = v[0], x1 = v[1];
        v[0] = x0 * cs - x1 * sn;
        v[1] = x1 * cs + x0 * sn;
      }
      const T t0 = from_float<T>(v[0]), t1 = from_float<T>(v[1]);
      a.out[r * a.out_stride + t.rows[0]] = t0;
      a.out[r * a.out_stride + t.rows[1]] = t1;
      if (head < a.n_heads) continue;
      const int64_t slot = a.slots[r];
      if (slot < 0 || slot >= a.n_slots) continue;  // outside the pool: skipped, like store_kv
      const bool is_k = head < a.n_heads + a.n_kv_heads;
      const int kv_head = is_k ? head - a.n_heads : head - a.n_heads - a.n_kv_heads;
      const int64_t at = (slot * a.n_kv_heads + kv_head) * d;
      if (a.kv_fp8) {
        const float sc = is_k ? a.k_scale : a.v_scale;
        uint8_t* c = static_cast<uint8_t*>(is_k ? a.k_cache : a.v_cache) + at;
        c[e0] = fp8_encode(to_float(t0) / sc);
        c[e1] = fp8_encode(to_float(t1) / sc);
      } else {
        T* c = static_cast<T*>(is_k ? a.k_cache : a.v_cache) + at;
        c[e0] = t0;
        c[e1] = t1;
      }
    }
    return;
  }
  if (a.glu) {  // act = f(gate) * up from the rounded gate and up, as linear_fp8 then gated_act.cu
    if (!t.active[0]) return;
#pragma unroll
    for (int r = 0; r < M; ++r) {
      const float g = to_float(from_float<T>(y[0][r])), u = to_float(from_float<T>(y[1][r]));
      const float f = a.gelu ? activate<Activation::gelu_tanh>(g) : activate<Activation::silu>(g);
      a.out[r * a.out_stride + t.rows[0]] = from_float<T>(f * u);
    }
    return;
  }
#pragma unroll
  for (int q = 0; q < kRowsPerWarp; ++q) {
    if (!t.active[q]) continue;
#pragma unroll
    for (int r = 0; r < M; ++r) {
      T* dst = a.out + r * a.out_stride + t.rows[q];
      *dst = from_float<T>(a.accumulate ? to_float(*dst) + y[q][r] : y[q][r]);
    }
  }
}

// Persistent: the grid is at most the blocks resident on the GPU at once (launch_typed), and
// block b computes row tiles b, b + gridDim.x, ... (a tile: kRowsPerBlock weight rows, or kWarps
// GLU / RoPE items), so the prologue below (staging and quantizing x: a few microseconds) is
// paid once per block instead of once per tile. In a tile, warp w streams its rows (set_tile)
// over the whole of K, lane l the 16-byte vectors l, l + 32, ... of both, kUnroll at a time
// with the next kUnroll already in flight; a row's sum is the same whichever block computes it.
// The weights never change during a run, so the first tile's first sweep goes out before
// griddepcontrol.wait (pdl_begin) and overlaps the previous kernel's tail and the prologue;
// each next tile's first sweep goes out before the current tile's epilogue.
// Prologue (after the wait): the M rows of x (normalised first when the norm is fused) are
// quantized exactly as fp8_quantize.cu does (per-token: a block max over the row; groups: one
// warp per 128-wide group; static: the input scale) and staged in shared memory as float
// (decoded code * 2^112, at xs_pos), with their scales.
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
  __shared__ float red[kWarps][M];                 // per-token amax: each warp's part
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int n_in = a.n_in, n_vec = n_in / kChunk;

  int tile = blockIdx.x;  // < a.n_tiles: the grid is at most the tile count
  Fp8GemvTile cur;
  set_tile(a, tile, warp, cur);
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

  // ---- prologue: stage x (normalised when fused), then quantize it in place ----
  __shared__ float scratch[32];  // block_sum
  float inv_rms[M];
#pragma unroll
  for (int r = 0; r < M; ++r) {
    inv_rms[r] = 1.f;
    if (a.norm_w) {  // rms_norm.cu's block-per-row arithmetic, in its order: bit-identical normed rows
      const T* xr = a.x + r * a.x_stride;
      const int V = a.norm_vec;
      float ss = 0.f;
      for (int j = threadIdx.x * V; j < n_in; j += kWarps * 32 * V)
        for (int i = 0; i < V; ++i) {
          const float v = to_float(xr[j + i]);
          ss += v * v;
        }
      ss = block_sum(ss, scratch);
      inv_rms[r] = 1.f / sqrtf(ss / float(n_in) + a.eps);
    }
  }
  // Staging: a thread's elements k = tid, tid + 256, ... in order, kStageBatch loads (and norm
  // weights) issued before any is used. Element by element, each element's loads, conversion
  // and shared store sat in their own branch-separated blocks (the norm and bounds tests), and
  // the compiler issued no load ahead of the previous element's use (PTX of the old loop): one
  // L2 round trip per element, 16 a thread at n_in 4096 and 56 at 14,336, in every block.
  constexpr int kStageBatch = 8;
  float amax[M];  // per-token: this thread's part of each row's amax, taken while staging
#pragma unroll
  for (int r = 0; r < M; ++r) {
    amax[r] = 0.f;
    const T* xr = a.x + r * a.x_stride;
    for (int k0 = threadIdx.x; k0 < n_in; k0 += kStageBatch * kWarps * 32) {
      float v[kStageBatch];
#pragma unroll
      for (int b = 0; b < kStageBatch; ++b) {
        const int k = k0 + b * kWarps * 32;
        v[b] = k < n_in ? to_float(xr[k]) : 0.f;
      }
      if (a.norm_w) {
        float g[kStageBatch];
#pragma unroll
        for (int b = 0; b < kStageBatch; ++b) {
          const int k = k0 + b * kWarps * 32;
          g[b] = k < n_in ? to_float(a.norm_w[k]) : 0.f;
        }
#pragma unroll
        for (int b = 0; b < kStageBatch; ++b) v[b] = to_float(from_float<T>(v[b] * inv_rms[r] * g[b]));
      }
#pragma unroll
      for (int b = 0; b < kStageBatch; ++b) {
        const int k = k0 + b * kWarps * 32;
        if (k < n_in) {
          xs[r * n_in + xs_pos(k)] = v[b];
          amax[r] = fmaxf(amax[r], fabsf(v[b]));
        }
      }
    }
  }
  __syncthreads();
  if (a.act == int(Fp8ActScheme::static_per_tensor)) {
    if (threadIdx.x < M) sx[threadIdx.x] = *a.input_scale;
  } else if constexpr (GROUPED) {
    // A group's 128 positions hold its 128 elements (xs_pos permutes within 16-element chunks).
    for (int g = warp; g < a.n_xg; g += kWarps)
#pragma unroll
      for (int r = 0; r < M; ++r) {
        float ga = 0.f;
        for (int k = g * 128 + lane; k < min(n_in, g * 128 + 128); k += 32) ga = fmaxf(ga, fabsf(xs[r * n_in + k]));
        ga = warp_max(ga);
        if (lane == 0) sx[r * a.n_xg + g] = fp8_act_scale(ga, a.ub);
      }
  } else {
#pragma unroll
    for (int r = 0; r < M; ++r) {
      const float m = warp_max(amax[r]);
      if (lane == 0) red[warp][r] = m;
    }
    __syncthreads();
    if (threadIdx.x < M) {
      float m = 0.f;
      for (int i = 0; i < kWarps; ++i) m = fmaxf(m, red[i][threadIdx.x]);
      sx[threadIdx.x] = fp8_act_scale(m, a.ub);
    }
  }
  __syncthreads();
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
      set_tile(a, next, warp, nxt);
      load_sweep(nxt, lane);
    }
    if (lane == 0) store_tile<T, M, GROUPED>(a, cur, acc, sx);
    if (next >= a.n_tiles) break;
    tile = next;
    cur = nxt;
  }
}

size_t staged_bytes(int64_t n, int64_t n_in, int64_t n_xg) { return size_t(n * n_in + n * n_xg) * sizeof(float); }

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

bool grouped_pair(const Fp8Weight& w) {
  return w.w_scheme == Fp8WeightScheme::block128 && w.act == Fp8ActScheme::dynamic_group128;
}

template <typename T, int M, bool GROUPED>
void launch_typed(const Tensor& out, const Tensor& x, const Fp8Weight& w, const Tensor& bias, bool accumulate,
                  cudaStream_t stream, const Fp8GemvFusion& f) {
  const int64_t n_out = w.w.size(0), n_in = w.w.size(1);
  const int n_xg = GROUPED ? int(div_up(n_in, kFp8Group)) : 1;
  const size_t smem = staged_bytes(M, n_in, n_xg);
  // Opt in to large dynamic shared memory once per instantiation (not a stream operation:
  // allowed while a graph is being captured).
  static std::once_flag once;
  std::call_once(once, [] {
    SEAM_CUDA_CHECK(cudaFuncSetAttribute(fp8_gemv_kernel<T, M, GROUPED>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         int(kFp8GemvMaxStagedBytes)));
  });
  Fp8GemvArgs<T> a{};
  a.out = out.ptr<T>();
  a.out_stride = out.stride[0];
  a.x = x.ptr<const T>();
  a.x_stride = x.stride[0];
  a.w = w.w.ptr<const uint8_t>();
  a.ws = w.w_scale.ptr<const float>();
  a.bias = bias.defined() ? bias.ptr<const T>() : nullptr;
  a.input_scale = w.act == Fp8ActScheme::static_per_tensor ? w.input_scale.ptr<const float>() : nullptr;
  a.ub = w.act_amax_ub;
  a.n_out = int(n_out);
  a.n_in = int(n_in);
  a.n_xg = n_xg;
  a.w_scheme = int(w.w_scheme);
  a.act = int(w.act);
  a.accumulate = accumulate;
  if (f.norm_weight.defined()) {
    a.norm_w = f.norm_weight.ptr<const T>();
    a.eps = f.eps;
    // rms_norm.cu's V: 16-byte vectors when x's rows and the weight are aligned for them.
    const bool vec = reinterpret_cast<uintptr_t>(x.data) % 16 == 0 && x.stride[0] % kVec<T> == 0 &&
                     n_in % kVec<T> == 0 && reinterpret_cast<uintptr_t>(f.norm_weight.data) % 16 == 0;
    a.norm_vec = vec ? kVec<T> : 1;
  }
  a.glu = f.glu;
  a.gelu = f.glu_act == Activation::gelu_tanh;
  a.rope = f.rope_store;
  if (f.rope_store) {
    const RopeStoreArgs& r = f.rope;
    a.positions = r.positions.ptr<const int32_t>();
    a.angles = r.tables().angles();
    a.rot_half = int(r.inv_freq.size(0));
    a.k_cache = r.k_cache.data;
    a.v_cache = r.v_cache.data;
    a.kv_fp8 = r.k_cache.dtype == DType::fp8_e4m3;
    a.k_scale = r.kv_scales.k;
    a.v_scale = r.kv_scales.v;
    a.slots = r.slots.ptr<const int32_t>();
    a.n_slots = r.k_cache.size(0);
    a.n_heads = r.n_heads;
    a.n_kv_heads = int(r.k_cache.size(1));
    a.head_dim = int(r.k_cache.size(2));
  }
  if (f.glu || f.rope_store) a.n_out = int(n_out / 2);
  a.n_tiles = int(f.glu || f.rope_store ? div_up(n_out / 2, kWarps) : div_up(n_out, kRowsPerBlock));
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
                     cudaStream_t stream, const Fp8GemvFusion& f) {
  SEAM_ASSERT(fp8_gemv_fusion_applies(out, x, w, f), "launch_fp8_gemv: shape or scheme outside fp8_gemv_applies");
  SEAM_ASSERT(!f.glu || (!bias.defined() && !accumulate), "launch_fp8_gemv: the GLU fusion takes no bias or accumulate");
  SEAM_ASSERT(!f.rope_store || !accumulate, "launch_fp8_gemv: the RoPE fusion takes no accumulate");
  if (w.w.size(0) == 0) return;
  SEAM_DISPATCH_FLOAT_TYPES(x.dtype, T, "fp8 gemv", [&] {
    if (grouped_pair(w)) launch_rows<T, true>(out, x, w, bias, accumulate, stream, f);
    else launch_rows<T, false>(out, x, w, bias, accumulate, stream, f);
  });
}

}  // namespace seam::cuda
