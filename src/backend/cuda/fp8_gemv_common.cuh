// What the two FP8 GEMV kernels share (fp8_gemv.h): the launch arguments, the prologue that
// stages and scales x in shared memory, the pairing of weight rows into a warp's items and the
// epilogue that stores them (scales, bias, accumulate, GLU, RoPE + KV store). The inner loops
// differ: fp8_gemv.cu widens the E4M3 weights on the CUDA cores (float32 FMAs), fp8_gemv_mma.cu
// multiplies them on the E4M3 tensor cores (fp8_mma.cuh). Included by those two files only.
#pragma once
#include <cuda_fp8.h>

#include <algorithm>

#include "backend/cuda/activation.cuh"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/rope_rotate.cuh"
#include "backend/cuda/fp8_act.cuh"
#include "backend/cuda/fp8_gemv.h"

namespace seam::cuda::fp8_gemv_detail {

constexpr int kWarps = 8;     // per block (both kernels)
constexpr int kPairRows = 2;  // weight rows of one item (a pair: two rows, GLU gate / up, a RoPE pair)
constexpr int kPairsPerTile = kWarps;  // a row tile: 8 pairs, 16 weight rows (plain)
constexpr int kChunk = 16;    // E4M3 values per 16-byte vector
constexpr int kPrefetchSweeps = 3;  // sweeps pulled into L2 while the prologue runs

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
  int n_tiles;               // row tiles of kPairsPerTile pair items (set_pair)
  int n_xg;                  // activation scale groups per row: ceil(n_in / 128) grouped, else 1
  int w_scheme, act;
  bool accumulate;
  const T* norm_w;           // defined: x is rms_norm(x) * norm_w (Fp8GemvFusion)
  float eps;
  int norm_vec;              // the elements per load of rms_norm.cu's sum of squares (its V)
  bool x_vec;                // x (and norm_w) readable as 16-byte vectors: stage_x's one-batch path
  bool prefetch_lines;       // the tensor-core kernel's L2 prefetch: a line once (fp8_gemv_mma.cu)
#ifdef SEAM_FP8_GEMV_PROBE
  int probe_slot;            // seam_fp8_gemv_probe only: the launch's row of marks (fp8_gemv_probe.cuh)
#endif
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

// Shared-memory position of x's element k within its staged row. The stream reads 16-element
// chunk j (lane j mod 32) as four float4 quarters; stored plainly, the 8 lanes of a quarter-warp
// sit 64 bytes apart and hit 2 distinct bank quads (a 4-way conflict on every x read, one
// per 16 weight bytes per row). The quarters of chunk j are therefore stored XOR-ed by
// (j >> 1) & 3, which sends those 8 lanes to 8 distinct quads. A permutation within each
// 16-element chunk (an involution): rows and 128-wide groups keep their elements, and the
// values and the order of the products are unchanged; only where they sit in shared memory.
__device__ __forceinline__ int xs_pos(int k) { return k ^ (((k >> 5) & 3) << 2); }

// The weight rows of one pair item and where they are.
struct Fp8GemvTile {
  int pair_item;  // the item: plain, rows 2 item and 2 item + 1; GLU / RoPE, a pair of rows
  int rows[kPairRows];
  bool active[kPairRows];
  const uint4* w_row[kPairRows];
};

// Pair `pair`: plain, rows 2 pair and 2 pair + 1 (two consecutive rows); GLU, gate row pair and
// up row n_out + pair; RoPE, a head's d / 2 items, first its rot_half rotary pairs (i, i +
// rot_half), then its pass-through dims paired the same way within [2 rot_half, d) (gemv.cu's
// order). A row tile t holds pairs t * 8 .. t * 8 + 7 in both kernels.
template <typename T>
__device__ __forceinline__ void set_pair(const Fp8GemvArgs<T>& a, int pair, Fp8GemvTile& t) {
  t.pair_item = pair;
#pragma unroll
  for (int q = 0; q < kPairRows; ++q) {
    const int item = a.glu || a.rope ? pair : 2 * pair + q;
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

// The global values the epilogue of a pair item reads (per-channel weight scales, bias, the old
// outputs under accumulate, RoPE's positions and slots), pulled into L1 by the thread that will
// run it, a tile's stream ahead: the seam_fp8_gemv_probe trace (eighteenth pass) had the
// epilogue of a one-tile block at ~0.75-1 us, a chain of dependent L2 round trips after the
// stream. A hint only: nothing is held in registers across the stream, and the epilogue reads
// the same addresses as ever (after pdl_begin, so the old outputs are final).
template <typename T, int M, bool GROUPED>
__device__ __forceinline__ void prefetch_epilogue(const Fp8GemvArgs<T>& a, const Fp8GemvTile& t) {
  auto l1 = [](const void* p) { asm volatile("prefetch.global.L1 [%0];" ::"l"(p)); };
#pragma unroll
  for (int q = 0; q < kPairRows; ++q) {
    if (!t.active[q]) continue;
    const int o = t.rows[q];
    if (!GROUPED) l1(a.ws + (a.w_scheme == int(Fp8WeightScheme::per_tensor) ? 0 : o));
    if (a.bias) l1(a.bias + o);
    if (a.accumulate)
#pragma unroll
      for (int r = 0; r < M; ++r) l1(a.out + r * a.out_stride + o);
  }
  if (a.rope) {
#pragma unroll
    for (int r = 0; r < M; ++r) {
      l1(a.positions + r);
      l1(a.slots + r);
    }
    // The pair's rotary frequencies (RopeAngles::angle reads them after the position).
    const int i = t.pair_item % (a.head_dim / 2);
    if (t.active[0] && i < a.rot_half)
      for (const float* f : {a.angles.hi, a.angles.lo, a.angles.long_hi, a.angles.long_lo})
        if (f != nullptr) l1(f + i);
  }
}

// The epilogue of one pair item (one thread, acc the item's full float32 sums: row q of the pair,
// activation row r): scales, bias, accumulate, and the GLU or RoPE + KV-store fusion.
template <typename T, int M, bool GROUPED>
__device__ __forceinline__ void store_tile(const Fp8GemvArgs<T>& a, const Fp8GemvTile& t,
                                           const float (&acc)[kPairRows][M], const float* sx) {
  float y[kPairRows][M];
#pragma unroll
  for (int q = 0; q < kPairRows; ++q) {
    const int o = t.active[q] ? t.rows[q] : 0;
#pragma unroll
    for (int r = 0; r < M; ++r) {
      // Rounded step by step (_rn: never contracted into an FMA with the bias), so the value is
      // the same in every fusion's instance of this epilogue: a fused path and its
      // decomposition (the plain store below) must agree bit for bit.
      y[q][r] = acc[q][r];
      if constexpr (!GROUPED) {
        const float ws = a.w_scheme == int(Fp8WeightScheme::per_tensor) ? a.ws[0] : a.ws[o];
        y[q][r] = __fmul_rn(__fmul_rn(sx[r], ws), y[q][r]);
      }
      if (a.bias) y[q][r] = __fadd_rn(y[q][r], to_float(a.bias[o]));
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
        rope_rotate(x0, x1, cs, sn, v[0], v[1]);  // rope_rotate.cuh: rope.cu's bits, never contracted
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
  for (int q = 0; q < kPairRows; ++q) {
    if (!t.active[q]) continue;
#pragma unroll
    for (int r = 0; r < M; ++r) {
      T* dst = a.out + r * a.out_stride + t.rows[q];
      *dst = from_float<T>(a.accumulate ? to_float(*dst) + y[q][r] : y[q][r]);
    }
  }
}

// The prologue of both kernels (after pdl_begin): the M rows of x (normalised first when the
// norm is fused: rms_norm.cu's block-per-row arithmetic in its order) staged in shared memory as
// float at xs_pos, [M, n_in], and their activation scales sx [M, n_xg] computed exactly as
// fp8_quantize.cu does (per-token: a block max over the row; groups: one warp per 128-wide group;
// static: the input scale). Ends synchronised; the caller then turns xs into its operand form.
//
// Two ways to read x, the same values (normed elements and amax do not depend on the order; the
// sum of squares keeps rms_norm.cu's order either way):
//  * x_vec (16-byte rows): a thread's vectors c = tid, tid + 256, ... of a row (kStageVecs at a
//    time) are loaded together, x's and the norm weight's, and kept in registers for both the
//    sum of squares and the staging: one L2 round trip a row up to 256 x kStageVecs vectors
//    (8,192 bf16 values; 2 for Llama's 14,336), where the scalar path below pays one a
//    2,048-value batch (7 for 14,336) plus one more pass for the norm. This chain of round trips
//    sits between the previous kernel's end and the first product (the CUPTI trace of the
//    seventeenth pass: every FP8 GEMV 10-17 us over its bytes).
//  * otherwise scalar loads, kStageBatch at a time.
//
// The staged values go to sink(r, c, v): row r's 16-byte vector c as kVec<T> floats (exact in T:
// x itself or the normed value rounded to T). stage_x's sink stores them as floats at xs_pos;
// the tensor-core kernel's (stage_codes_vec, fp8_gemv_mma.cu) stores the T vector whole.
template <typename T, int M, typename Sink>
__device__ __forceinline__ void stage_x_vec(const Fp8GemvArgs<T>& a, float (&amax)[M], float* scratch, Sink&& sink) {
  constexpr int kV = kVec<T>, kStageVecs = 4;
  const int n_in = a.n_in, n_vec = n_in / kV, tid = int(threadIdx.x), stride = kWarps * 32;
  const uint4 zero = make_uint4(0, 0, 0, 0);
  const uint4* gw = reinterpret_cast<const uint4*>(a.norm_w);
  const bool one_batch = n_vec <= kStageVecs * stride;  // the row stays in registers
#pragma unroll
  for (int r = 0; r < M; ++r) {
    amax[r] = 0.f;
    const uint4* xr = reinterpret_cast<const uint4*>(a.x + r * a.x_stride);
    uint4 xv[kStageVecs], gv[kStageVecs];
    auto load = [&](int c0) {
#pragma unroll
      for (int i = 0; i < kStageVecs; ++i) {
        const int c = c0 + i * stride;
        xv[i] = c < n_vec ? xr[c] : zero;
        gv[i] = gw != nullptr && c < n_vec ? gw[c] : zero;
      }
    };
    float inv_rms = 1.f;
    if (gw != nullptr) {  // rms_norm.cu's sum: thread tid's vectors in order, then block_sum
      float ss = 0.f;
      for (int c0 = tid; c0 < n_vec; c0 += kStageVecs * stride) {
        load(c0);
#pragma unroll
        for (int i = 0; i < kStageVecs; ++i) {
          if (c0 + i * stride >= n_vec) break;
          const T* e = reinterpret_cast<const T*>(&xv[i]);
#pragma unroll
          for (int k = 0; k < kV; ++k) {
            const float v = to_float(e[k]);
            ss += v * v;
          }
        }
      }
      ss = block_sum(ss, scratch);
      inv_rms = 1.f / sqrtf(ss / float(n_in) + a.eps);
    }
    for (int c0 = tid; c0 < n_vec; c0 += kStageVecs * stride) {
      if (gw == nullptr || !one_batch) load(c0);  // one batch with the norm: still in registers
#pragma unroll
      for (int i = 0; i < kStageVecs; ++i) {
        const int c = c0 + i * stride;
        if (c >= n_vec) break;
        const T* e = reinterpret_cast<const T*>(&xv[i]);
        const T* g = reinterpret_cast<const T*>(&gv[i]);
        float v[kV];
#pragma unroll
        for (int k = 0; k < kV; ++k) {
          v[k] = to_float(e[k]);
          if (gw != nullptr) v[k] = to_float(from_float<T>(v[k] * inv_rms * to_float(g[k])));
          amax[r] = fmaxf(amax[r], fabsf(v[k]));
        }
        sink(r, c, v);
      }
    }
  }
}

// Per-token scales sx[r] from each thread's part of row r's amax: a block max (two warp steps
// through shared memory), then fp8_quantize.cu's scale. Ends with sx written by threads < M,
// not yet synchronised.
template <typename T, int M>
__device__ __forceinline__ void token_scales(const Fp8GemvArgs<T>& a, const float (&amax)[M], float* sx) {
  __shared__ float red[kWarps][M];  // each warp's part
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
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

// The scales that need only each row's amax: static (the input scale) or per-token
// (token_scales); dynamic 128-groups are the caller's. Not synchronised.
template <typename T, int M, bool GROUPED>
__device__ __forceinline__ void row_scales(const Fp8GemvArgs<T>& a, const float (&amax)[M], float* sx) {
  if (a.act == int(Fp8ActScheme::static_per_tensor)) {
    if (threadIdx.x < M) sx[threadIdx.x] = *a.input_scale;
  } else if constexpr (!GROUPED) {
    token_scales<T, M>(a, amax, sx);
  }
}

template <typename T, int M, bool GROUPED>
__device__ __forceinline__ void stage_x(const Fp8GemvArgs<T>& a, float* xs, float* sx) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int n_in = a.n_in;
  __shared__ float scratch[32];  // block_sum
  float amax[M];  // per-token: this thread's part of each row's amax, taken while staging
  if (a.x_vec) {
    stage_x_vec<T, M>(a, amax, scratch, [&](int r, int c, const float(&v)[kVec<T>]) {
#pragma unroll
      for (int k = 0; k < kVec<T>; ++k) xs[r * n_in + xs_pos(c * kVec<T> + k)] = v[k];
    });
  } else {
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
  }  // scalar path
  __syncthreads();
  row_scales<T, M, GROUPED>(a, amax, sx);
  if (GROUPED && a.act != int(Fp8ActScheme::static_per_tensor)) {
    // A group's 128 positions hold its 128 elements (xs_pos permutes within 16-element chunks).
    for (int g = warp; g < a.n_xg; g += kWarps)
#pragma unroll
      for (int r = 0; r < M; ++r) {
        float ga = 0.f;
        for (int k = g * 128 + lane; k < min(n_in, g * 128 + 128); k += 32) ga = fmaxf(ga, fabsf(xs[r * n_in + k]));
        ga = warp_max(ga);
        if (lane == 0) sx[r * a.n_xg + g] = fp8_act_scale(ga, a.ub);
      }
  }
  __syncthreads();
}

// ---- host side ----
inline size_t staged_bytes(int64_t n, int64_t n_in, int64_t n_xg) { return size_t(n * n_in + n * n_xg) * sizeof(float); }
inline bool grouped_pair(const Fp8Weight& w) {
  return w.w_scheme == Fp8WeightScheme::block128 && w.act == Fp8ActScheme::dynamic_group128;
}
// Blocks of `kernel` (kWarps warps) resident on the whole device with `smem` bytes of dynamic
// shared memory: the persistent kernels' largest grid (cached; allowed during graph capture).
int resident_blocks(const void* kernel, size_t smem);
// The tile count and the arguments of one launch (both kernels). n_xg: groups per row of x.
template <typename T>
Fp8GemvArgs<T> make_args(const Tensor& out, const Tensor& x, const Fp8Weight& w, const Tensor& bias, bool accumulate,
                         const Fp8GemvFusion& f, int n_xg) {
  const int64_t n_out = w.w.size(0), n_in = w.w.size(1);
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
  // stage_x's vector path: 16-byte rows of x, and of the norm weight where one is fused (then
  // rms_norm.cu's V is the vector too, so its sum of squares keeps its order).
  a.x_vec = reinterpret_cast<uintptr_t>(x.data) % 16 == 0 && x.stride[0] % kVec<T> == 0 && n_in % kVec<T> == 0 &&
            (!f.norm_weight.defined() || a.norm_vec == kVec<T>);
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
  // Both kernels: a tile is kPairsPerTile pair items (plain: two rows each).
  const int64_t pairs = f.glu || f.rope_store ? n_out / 2 : (n_out + 1) / 2;
  a.n_tiles = int(div_up(pairs, kPairsPerTile));
  return a;
}
// The tensor-core kernel's launch (fp8_gemv_mma.cu), rows 1..kFp8GemvMaxRows.
template <typename T, bool GROUPED>
void launch_mma_rows(const Tensor& out, const Tensor& x, const Fp8Weight& w, const Tensor& bias, bool accumulate,
                     cudaStream_t stream, const Fp8GemvFusion& f);

}  // namespace seam::cuda::fp8_gemv_detail
