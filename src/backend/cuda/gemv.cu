#include "backend/cuda/gemv.h"

#include "backend/cuda/activation.cuh"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/rope_rotate.cuh"
#include "backend/cuda/diagnostic_switch.h"
#include "backend/cuda/gemv_post_norm.cuh"
#include "backend/cuda/gemv_qk_norm_tail.cuh"
#include "backend/cuda/gemv_combine_tail.cuh"
#include "backend/cuda/gemv_route_tail.cuh"
#include "backend/cuda/moe_route.h"
#include "backend/cuda/gemv_slices.h"
#include "backend/cuda/moe_common.cuh"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>

namespace seam::cuda {

namespace {

std::atomic<int64_t> g_post_norm_launches{0};  // gemv_post_norm_launches()
std::atomic<int64_t> g_route_launches{0};      // gemv_route_launches()
std::atomic<int64_t> g_combine_launches{0};    // gemv_experts_combine_launches()
std::atomic<int64_t> g_qk_norm_launches{0};    // gemv_qk_norm_launches()

constexpr int kWarps = 8;   // per block; the block's rows times the K slices of each row
constexpr int kUnroll = 4;  // 16-byte weight loads in flight per lane before any math

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
  const T* w;          // [n_out, n_in]; GLU [2 * n_out, n_in]: gate rows, then up rows; ROPE [2 * n_out, n_in]
  const T* bias;       // [n_out] (ROPE: [2 * n_out]) or null (never with GLU)
  const T* norm_w;     // NORM: [n_in]
  float eps;
  bool accumulate;     // out += result
  bool early_load;     // issue the first weight loads before waiting for the previous kernel
  int n_out, n_in;     // n_out: the warps' items (rows; GLU: features; ROPE: rotary pairs)
  // ROPE: the qkv projection, [q | k | v] heads of head_dim; see GemvFusion::rope_store.
  const int32_t* positions;  // [1]
  RopeAngles angles;         // the rotary tables (rope_angle.h; LongRoPE's long one from long_from on)
  int rot_half;              // rotary_dim / 2 (<= head_dim / 2): dims [2 rot_half, head_dim) pass through
  bool gelu;                 // GLU: gelu_tanh(gate) * up instead of silu(gate) * up
  T* k_cache;                // [n_slots, n_kv_heads, head_dim]
  T* v_cache;
  const int32_t* slots;      // [1]
  int64_t n_slots;
  int n_heads, n_kv_heads, head_dim;
  // POST (gemv_post_norm_kernel): residual [post_n] += rms_norm(out row 0) * post_w, by the last block.
  T* residual;
  const T* post_w;           // [post_n]
  float post_eps;
  int post_n;                // out's columns (w's rows)
  unsigned* post_counter;    // the blocks' arrivals; zero between launches
  // ROUTE (gemv_route_kernel): the last block routes out's row 0 (route_experts logits) into
  // route_ids / route_weights [route_k]; route_counter: the blocks' arrivals, zero between launches.
  int32_t* route_ids;
  float* route_weights;
  int route_experts, route_k;
  bool route_renorm;
  unsigned* route_counter;
  T* normed_out;             // kNormExact: block 0 writes rms_norm(x) * norm_w here ([n_in])
  // QK_NORM (gemv_qk_norm_kernel): per-head norms (with eps, rope's tables and caches above) and
  // the heads' row counts; null: no q/k-norm tail.
  const T* q_norm_w;
  const T* k_norm_w;
  unsigned* head_counters;
  // EXPERTS (gemv_experts_kernel): grid row y is slot s, whose expert e = expert_ids[s] offsets w
  // by e * expert_stride, x by (s / x_slot_div) * x_slot_stride and out by s * out_slot_stride.
  const int32_t* expert_ids;
  int n_experts, x_slot_div;
  int64_t expert_stride, x_slot_stride, out_slot_stride;
  // COMBINE (gemv_experts_combine_kernel): the folded moe_combine into combine_out [n, n_rows].
  T* combine_out;
  int64_t combine_out_stride;
  const float* combine_weights;  // [n, k]
  unsigned* combine_counters;    // [n * gridDim.x]
  int combine_k;
};

// A block's 8 warps cover kWarps / S output features, S warps each (S "K slices": one
// contiguous part of the row each). A warp streams its part of w's row in 16-byte
// vectors, kUnroll at a time per lane with the next kUnroll already in flight, and dots
// each with the M rows of x; shuffles reduce the lanes, shared memory the slices.
// Slicing K keeps enough loads in flight when n_out is small (the 0.5B/1B shapes'
// 896/2048 features would leave most SMs idle at one warp per feature). A "feature" is one
// weight row for a plain projection, or two (kEpiPlainPair: rows j and n_out + j, each x vector
// loaded once for both), as for the GLU and RoPE pairs.
//
// Fusions, each replacing a kernel of the decode step:
//  * Norm: the product is taken with rms_norm(x) * g, and the epilogue scales by 1 / rms.
//    kNormInline: each warp multiplies the x it reads by g and sums x^2 on the side (the
//    slices of a row cover all of x between them): no prologue, but g and x go through L1
//    in every warp. kNormStaged: the block first stages x * g (rounded to T, as HF rounds the
//    normed activations) in shared memory while summing x^2, with the first sweep's weight
//    loads already in flight. Staging costs a read of x and g per block, so it pays only
//    where a block streams many weight bytes: measured (H200, docs/performance.md), staged
//    was free with GLU (two rows a warp) at S = 1 but 5-75 us slower than inline on single
//    rows (qkv, lm_head) and on GLU at S = 2, so only GLU at S = 1 stages.
//  * GLU: a warp streams the gate row j and the up row n_out + j and writes
//    silu(gate) * up: the MLP's [gate | up] never reaches memory.
//  * ROPE: the qkv projection. A warp streams the rotary pair of rows i and i + d/2 of one
//    head, rounds both to T, rotates q and k heads exactly as rope_kernel does (sincosf of
//    the angle of rope_angle.h) and stores k and v to the token's KV slot: the
//    rope_store_kv kernel drops out and its results are bit-identical.
//  * accumulate: out += result (each element has one owner, so in place is safe); the old
//    value is read at the start, off the critical path.
// The weights never change during a run, so with early_load the first sweep's loads go out
// before griddepcontrol.wait: with PDL they overlap the previous kernel's tail.
// Invariant: n_in % 8 == 0 and every row 16-byte aligned (gemv_applies).
// kNormExact: GemvFusion::normed_out, rms_norm's normed row staged (route kernel only).
enum NormMode { kNormNone, kNormInline, kNormStaged, kNormExact };
// kEpiPlainPair: the plain product, two rows a warp (rows j and n_out + j of w, where n_out is
// half of w's rows), each x vector loaded once for both: the large projections stream faster
// this way than one row a warp (gemv_pairs_plain_rows, gemv_slices.h).
enum Epilogue { kEpiPlain, kEpiGlu, kEpiRope, kEpiPlainPair };

// The kernel's body: a __device__ function so that gemv_post_norm_kernel runs it and then its
// tail; its returns only end the body (every thread then reaches the tail's barrier).
template <typename T, typename TO, int M, int S, int NORM, int EPI, int PU = kUnroll>
__device__ __forceinline__ void gemv_body(const GemvArgs<T, TO>& a) {
  constexpr int R = EPI == kEpiPlain ? 1 : 2;  // weight rows a warp streams
  constexpr int U = EPI == kEpiPlain ? kUnroll : PU;  // vectors per row per sweep (pairs: PU)
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
  // The weight rows of this warp's item.
  int64_t rows[R];
  const int item = active ? row : 0;
  if constexpr (EPI == kEpiRope) {
    // A head's d / 2 items: first its rot_half rotary pairs (i, i + rot_half), then its
    // pass-through dims paired the same way within [2 rot_half, d).
    const int half = a.head_dim / 2, rh = a.rot_half, i = item % half;
    const int64_t head0 = int64_t(item / half) * a.head_dim;
    rows[0] = i < rh ? head0 + i : head0 + rh + i;
    rows[R - 1] = rows[0] + (i < rh ? rh : half - rh);
  } else {
#pragma unroll
    for (int q = 0; q < R; ++q) rows[q] = int64_t(item) + q * a.n_out;
  }
  const uint4* w_row[R];
#pragma unroll
  for (int q = 0; q < R; ++q) w_row[q] = reinterpret_cast<const uint4*>(a.w + rows[q] * n_in);

  uint4 wv[R][U];  // the next sweep's weights, in flight
  auto load_sweep = [&](int base) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int j = base + u * 32;
#pragma unroll
      for (int q = 0; q < R; ++q) wv[q][u] = active && j < v_end ? load_stream(w_row[q] + j) : make_uint4(0, 0, 0, 0);
    }
  };
  int base = v_begin + lane;
  if (a.early_load) load_sweep(base);
  pdl_begin();
  if (!a.early_load) load_sweep(base);

  float prev[R][M];  // accumulate: the old outputs (kEpiPlainPair: of both rows), owned by lane r
#pragma unroll
  for (int q = 0; q < R; ++q)
#pragma unroll
    for (int r = 0; r < M; ++r)
      prev[q][r] = a.accumulate && active && lane == r ? to_float(a.out[r * a.out_stride + rows[q]]) : 0.f;

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
    // xs needs no barrier of its own: block_sum's first __syncthreads follows all writes above.
#pragma unroll
    for (int r = 0; r < M; ++r)
      inv_rms[r] = 1.f / sqrtf(block_sum(ss[r], scratch) / float(n_in) + a.eps);  // as rms_norm.cu
  }
  if constexpr (NORM == kNormExact) {
    // rms_norm_kernel<T, 256, kVec<T>> (rms_norm.cu, launch_rms_norm's block per row) on row 0,
    // its loops and arithmetic as written there, so normed is bit-identical to rms_norm's; the
    // product then reads it from xs as linear reads normed (inv_rms stays 1).
    static_assert(kWarps * 32 == 256, "rms_norm's block-per-row kernel has 256 threads");
    constexpr int V = kVec<T>;
    float ss = 0.f;
    for (int j = threadIdx.x * V; j < n_in; j += kWarps * 32 * V) {
      float v[V];
      load_vec<T>(a.x + j, v);
#pragma unroll
      for (int i = 0; i < V; ++i) ss += v[i] * v[i];
    }
    ss = block_sum(ss, scratch);
    const float scale = 1.f / sqrtf(ss / float(n_in) + a.eps);
    for (int j = threadIdx.x * V; j < n_in; j += kWarps * 32 * V) {
      float v[V], w[V];
      load_vec<T>(a.x + j, v);
      load_vec<T>(a.norm_w + j, w);
#pragma unroll
      for (int i = 0; i < V; ++i) v[i] = v[i] * scale * w[i];
      store_vec<T>(xs + j, v);
      if (blockIdx.x == 0) store_vec<T>(a.normed_out + j, v);
    }
    __syncthreads();  // xs complete before any warp's product reads it
  }

  float acc[R][M], ss[M];  // ss: kNormInline's sum of x^2 over this slice
#pragma unroll
  for (int r = 0; r < M; ++r) {
    ss[r] = 0.f;
#pragma unroll
    for (int q = 0; q < R; ++q) acc[q][r] = 0.f;
  }
  if (active) {  // no early return: the block meets at barriers below
    for (; base < v_end; base += 32 * U) {
      uint4 cur[R][U];
#pragma unroll
      for (int q = 0; q < R; ++q)
#pragma unroll
        for (int u = 0; u < U; ++u) cur[q][u] = wv[q][u];
      load_sweep(base + 32 * U);
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int j = base + u * 32;
        if (j >= v_end) break;
        float gf[8];
        if constexpr (NORM == kNormInline) unpack<T>(__ldg(reinterpret_cast<const uint4*>(a.norm_w) + j), gf);
#pragma unroll
        for (int r = 0; r < M; ++r) {
          float xf[8];
          if constexpr (NORM == kNormStaged || NORM == kNormExact) {
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
  if constexpr (EPI == kEpiRope) {
    if (lane >= M) return;
    const int r = lane;  // x row (M == 1 in practice: one token)
    const int d = a.head_dim, half = d / 2, head = row / half, i = row % half;
    const int64_t head0 = int64_t(head) * d;
    T* out = reinterpret_cast<T*>(a.out) + r * a.out_stride;
    float y[2];
#pragma unroll
    for (int q = 0; q < 2; ++q)  // rounded like the qkv product rope_kernel reads
      y[q] = to_float(from_float<T>(acc[q][r] * inv_rms[r] + (a.bias != nullptr ? to_float(a.bias[rows[q]]) : 0.f)));
    if (head < a.n_heads + a.n_kv_heads && i < a.rot_half) {  // q or k, a rotary pair: rotate it
      float sn, cs;
      sincosf(a.angles.angle(a.positions[r], i), &sn, &cs);  // as rope_kernel
      const float x0 = y[0], x1 = y[1];
      rope_rotate(x0, x1, cs, sn, y[0], y[1]);  // rope_rotate.cuh: rope.cu's bits
    }
    const T t0 = from_float<T>(y[0]), t1 = from_float<T>(y[1]);
    out[rows[0]] = t0;
    out[rows[1]] = t1;
    if (head >= a.n_heads) {  // k or v: also the token's KV slot (skipped outside the pool, like store_kv)
      const int64_t slot = a.slots[r];
      if (slot >= 0 && slot < a.n_slots) {
        const bool is_k = head < a.n_heads + a.n_kv_heads;
        const int kv_head = is_k ? head - a.n_heads : head - a.n_heads - a.n_kv_heads;
        T* c = (is_k ? a.k_cache : a.v_cache) + (slot * a.n_kv_heads + kv_head) * d;
        c[rows[0] - head0] = t0;
        c[rows[1] - head0] = t1;
      }
    }
    return;
  }
  if constexpr (EPI == kEpiPlainPair) {
#pragma unroll
    for (int r = 0; r < M; ++r) {
      if (lane != r) continue;
#pragma unroll
      for (int q = 0; q < R; ++q) {
        const float b = a.bias != nullptr ? to_float(a.bias[rows[q]]) : 0.f;
        a.out[r * a.out_stride + rows[q]] = from_float<TO>(acc[q][r] * inv_rms[r] + b + prev[q][r]);
      }
    }
    return;
  }
  const float b = a.bias != nullptr ? to_float(a.bias[row]) : 0.f;
#pragma unroll
  for (int r = 0; r < M; ++r) {
    if (lane != r) continue;
    float y = acc[0][r] * inv_rms[r];
    if constexpr (EPI == kEpiGlu) {
      const float up = acc[R - 1][r] * inv_rms[r];
      y = (a.gelu ? gelu_tanh_f32(y) : y / (1.f + __expf(-y))) * up;
    }
    y += b + prev[0][r];
    a.out[r * a.out_stride + row] = from_float<TO>(y);
  }
}

template <typename T, typename TO, int M, int S, int NORM, int EPI, int PU = kUnroll>
__global__ void __launch_bounds__(kWarps * 32) gemv_kernel(GemvArgs<T, TO> a) {
  gemv_body<T, TO, M, S, NORM, EPI, PU>(a);
}

// A plain projection of one row (o_proj, down_proj) and Gemma's post-norm after it:
// out = x @ w^T (+ bias) exactly as gemv_kernel writes it, then residual += rms_norm(out) *
// post_w exactly as rms_norm_add_kernel computes it (same 256 threads, same vectors, same
// order of the sums: bit-identical to launch_gemv + launch_rms_norm_add). The rms_norm_add
// launch drops out; the last block to finish applies the norm (gemv_post_norm.cuh).
template <typename T, int S, int EPI, int PU>
__global__ void __launch_bounds__(kWarps * 32) gemv_post_norm_kernel(GemvArgs<T, T> a) {
  static_assert(kWarps * 32 == 256, "the tail matches rms_norm_add's 256-thread block");
  gemv_body<T, T, 1, S, kNormNone, EPI, PU>(a);
  post_norm_tail<T>(a.out, a.residual, a.post_w, a.post_eps, a.post_n, a.post_counter);
}

// A mixture-of-experts router of one row and its routing (GemvFusion::route): the logits exactly
// as gemv_kernel writes them, then the last block to finish routes them (gemv_route_tail.cuh)
// exactly as moe_route_warp_kernel: the moe_route launch drops out.
template <typename T, int S, int NORM, int EPI, int PU>
__global__ void __launch_bounds__(kWarps * 32) gemv_route_kernel(GemvArgs<T, T> a) {
  gemv_body<T, T, 1, S, NORM, EPI, PU>(a);
  route_tail<T>(a.out, a.route_ids, a.route_weights, a.route_experts, a.route_k, a.route_renorm, a.route_counter);
}

// The qkv projection of one row of a q/k-norm model (GemvFusion::qk_norm): rms_norm_linear's
// product exactly as gemv_kernel writes it (inline norm), then the last block to finish each head
// finishes it as qk_norm_rope_store's kernel does (gemv_qk_norm_tail.cuh): that launch drops out.
template <typename T, int S, int EPI, int PU>
__global__ void __launch_bounds__(kWarps * 32) gemv_qk_norm_kernel(GemvArgs<T, T> a) {
  gemv_body<T, T, 1, S, kNormInline, EPI, PU>(a);
  QkTail<T> t;
  t.qkv = a.out;
  t.q_norm = a.q_norm_w;
  t.k_norm = a.k_norm_w;
  t.eps = a.eps;
  t.n_heads = a.n_heads;
  t.n_kv_heads = a.n_kv_heads;
  t.d = a.head_dim;
  t.half = a.rot_half;
  t.positions = a.positions;
  t.angles = a.angles;
  t.k_cache = a.k_cache;
  t.v_cache = a.v_cache;
  t.slots = a.slots;
  t.n_slots = a.n_slots;
  t.counters = a.head_counters;
  constexpr int kItems = kWarps / S, kRowsPerItem = EPI == kEpiPlain ? 1 : 2;
  qk_norm_tail<T, kItems, kRowsPerItem>(t, a.n_out);
}

// The expert-indexed GEMV (launch_gemv_experts): slot blockIdx.y's expert picks the weight
// matrix, then the plain body runs as for a dense projection. The ids are the previous kernel's
// output (moe_route), so nothing is loaded before the PDL wait (early_load is off). MINB: the
// resident blocks an SM asked of the compiler. The offset pointers cost registers: unbounded, the
// plain pair takes 70-72 against the dense kernel's 64 (three blocks an SM instead of four); asked
// for four it fits 64 with 4-20 bytes spilled (ptxas -v). experts_min_blocks picks which.
template <typename T, typename TO, int S, int EPI, int PU, int MINB>
__global__ void __launch_bounds__(kWarps * 32, MINB) gemv_experts_kernel(GemvArgs<T, TO> a) {
  pdl_begin();
  const int64_t slot = blockIdx.y;
  a.w += expert_of(a.expert_ids, slot, a.n_experts) * a.expert_stride;
  a.x += slot / a.x_slot_div * a.x_slot_stride;
  a.out += slot * a.out_slot_stride;
  gemv_body<T, TO, 1, S, kNormNone, EPI, PU>(a);
}

// gemv_experts_kernel's plain products (into float32) with moe_combine folded in: the last of the
// k blocks of a token's output tile (gemv_combine_tail.cuh) sums the k slots' rows of that tile in
// slot order and adds them to combine_out, as moe_combine_vec_kernel does (the moe_combine launch
// drops out). The products are gemv_experts_kernel's, the same slices and epilogue.
template <typename T, int S, int EPI, int PU, int MINB>
__global__ void __launch_bounds__(kWarps * 32, MINB) gemv_experts_combine_kernel(GemvArgs<T, float> a) {
  pdl_begin();
  const int64_t slot = blockIdx.y;
  const float* y = a.out;  // every slot's products, [n_slots, out_slot_stride]
  a.w += expert_of(a.expert_ids, slot, a.n_experts) * a.expert_stride;
  a.x += slot / a.x_slot_div * a.x_slot_stride;
  a.out += slot * a.out_slot_stride;
  gemv_body<T, float, 1, S, kNormNone, EPI, PU>(a);
  constexpr int kItems = kWarps / S, kRowsPerItem = EPI == kEpiPlain ? 1 : 2;
  combine_tail<T, kItems, kRowsPerItem>(y, a.out_slot_stride, a.combine_out, a.combine_out_stride, a.combine_weights,
                                        a.combine_k, a.n_out, a.combine_counters);
}

// The paired epilogues (GLU, ROPE) are fused only where a feature pair needs at most this many
// K slices; above it the op runs as norm-fused GEMV plus its own kernel. A pair is two rows a
// warp, so with many slices every warp holds little work and the fused kernel's latency can
// exceed the kernel it saves. Measured (H200, batch-1 decode step, with the earlier slice rule
// that split 1B's qkv+RoPE pairs 8 ways): Llama-3.2-1B 1.036 ms with every pair fused, 1.008 ms
// at 4, 1.026 ms at 1; Llama-3.1-8B 4.329 ms at 8, 4.407 ms at 2; Qwen2.5-0.5B 0.707 ms fused,
// 0.721 at 1. The current slices_for gives pairs at most 2 slices on these shapes, so all fuse.
// SEAM_GEMV_PAIR_MAX_SLICES (1, 2, 4 or 8) overrides it (diagnostic).
constexpr int kPairMaxSlices = 4;
int pair_fusion_max_slices() {
  static const int n = env_choice("SEAM_GEMV_PAIR_MAX_SLICES", kPairMaxSlices, {1, 2, 4, 8});
  return n;
}

// SEAM_GEMV_EARLY_LOAD=0 keeps every weight load behind the PDL wait (a diagnostic switch).
bool early_load_enabled() {
  static const bool on = env_choice("SEAM_GEMV_EARLY_LOAD", 1, {0, 1}) == 1;
  return on;
}

// Vectors per row per sweep in the paired kernels (two rows a warp, so 2 x kPairUnroll vectors
// in flight per lane, as many as a single row's kUnroll). Halving them from 4 cut the paired
// kernels' registers from 91-108 to 58-74, so more of their blocks are resident: measured on the
// H200 (batch-1 decode) Llama-3.2-1B 0.795 ms against 0.828 at 4, Qwen2.5-0.5B 0.601 / 0.611,
// Qwen3-0.6B 0.864 / 0.871, Llama-3.1-8B 4.172 / 4.180. SEAM_GEMV_PAIR_UNROLL=2|4 overrides it.
constexpr int kPairUnroll = 2;
int pair_unroll() {
  static const int u = env_choice("SEAM_GEMV_PAIR_UNROLL", kPairUnroll, {2, 4});
  return u;
}

// Plain projections (no GLU / RoPE epilogue) stream two rows a warp where gemv_pairs_plain_rows
// (gemv_slices.h) says so. SEAM_GEMV_PLAIN_PAIR=0 never pairs them, 2 pairs every even n_out
// (diagnostic switches; 1, the rule, is the default).
bool plain_pair(int64_t n_out, int64_t n_in, size_t elem_bytes) {
  static const int mode = env_choice("SEAM_GEMV_PLAIN_PAIR", 1, {0, 1, 2});
  if (mode == 0) return false;
  return mode == 2 ? n_out % 2 == 0 : gemv_pairs_plain_rows(n_out, n_in, elem_bytes);
}

// Vectors per weight row per sweep of the instantiation kernel_of picks: kUnroll for one row a
// warp, the pair unroll for two (the plain pair always kPairUnroll, as kernel_of instantiates it).
int row_unroll(int epi) {
  if (epi == kEpiPlainPair) return kPairUnroll;
  return epi == kEpiPlain ? kUnroll : pair_unroll();
}

template <typename T, typename TO>
using GemvKernel = void (*)(GemvArgs<T, TO>);

// The instantiation a launch with S slices runs: the norm staged only where each block streams
// whole rows of a pair (S = 1). Run 3 measured GLU staged at S = 2 (1B: 24.9 us, 0.5B: 12.0)
// slower than norm + GEMV + SiLU kernels (22.4 / ~10.5), and staging on single rows slower too.
template <typename T, typename TO, int M, int S>
GemvKernel<T, TO> kernel_of(bool norm, int epi) {
  if (epi == kEpiPlainPair)
    return norm ? gemv_kernel<T, TO, M, S, kNormInline, kEpiPlainPair, kPairUnroll>
                : gemv_kernel<T, TO, M, S, kNormNone, kEpiPlainPair, kPairUnroll>;
  if (!norm) return gemv_kernel<T, TO, M, S, kNormNone, kEpiPlain>;
  if constexpr (std::is_same_v<T, TO>) {
    constexpr int kPairNorm = S == 1 ? kNormStaged : kNormInline;
    if (pair_unroll() == 2) {
      if (epi == kEpiGlu) return gemv_kernel<T, TO, M, S, kPairNorm, kEpiGlu, 2>;
      if (epi == kEpiRope) return gemv_kernel<T, TO, M, S, kPairNorm, kEpiRope, 2>;
    }
    if (epi == kEpiGlu) return gemv_kernel<T, TO, M, S, kPairNorm, kEpiGlu>;
    if (epi == kEpiRope) return gemv_kernel<T, TO, M, S, kPairNorm, kEpiRope>;
  }
  return gemv_kernel<T, TO, M, S, kNormInline, kEpiPlain>;
}

template <typename T, typename TO, int M>
GemvKernel<T, TO> kernel_of(int slices, bool norm, int epi) {
  switch (slices) {
    case 1: return kernel_of<T, TO, M, 1>(norm, epi);
    case 2: return kernel_of<T, TO, M, 2>(norm, epi);
    case 4: return kernel_of<T, TO, M, 4>(norm, epi);
    default: return kernel_of<T, TO, M, 8>(norm, epi);
  }
}

// The post-norm kernel of a plain projection (one row a warp, or the plain pair) at S slices.
template <typename T>
GemvKernel<T, T> post_norm_kernel_of(int slices, int epi) {
  const bool pair = epi == kEpiPlainPair;
  switch (slices) {
    case 1: return pair ? gemv_post_norm_kernel<T, 1, kEpiPlainPair, kPairUnroll> : gemv_post_norm_kernel<T, 1, kEpiPlain, kUnroll>;
    case 2: return pair ? gemv_post_norm_kernel<T, 2, kEpiPlainPair, kPairUnroll> : gemv_post_norm_kernel<T, 2, kEpiPlain, kUnroll>;
    case 4: return pair ? gemv_post_norm_kernel<T, 4, kEpiPlainPair, kPairUnroll> : gemv_post_norm_kernel<T, 4, kEpiPlain, kUnroll>;
    default: return pair ? gemv_post_norm_kernel<T, 8, kEpiPlainPair, kPairUnroll> : gemv_post_norm_kernel<T, 8, kEpiPlain, kUnroll>;
  }
}

// The route kernel of a plain projection (one row a warp, or the plain pair) at S slices: the
// instantiations linear's kernel_of picks for it (no norm), so the logits are linear's.
// exact: GemvFusion::normed_out (kNormExact), else no norm.
template <typename T, int NORM>
GemvKernel<T, T> route_kernel_of(int slices, int epi) {
  const bool pair = epi == kEpiPlainPair;
  switch (slices) {
    case 1: return pair ? gemv_route_kernel<T, 1, NORM, kEpiPlainPair, kPairUnroll> : gemv_route_kernel<T, 1, NORM, kEpiPlain, kUnroll>;
    case 2: return pair ? gemv_route_kernel<T, 2, NORM, kEpiPlainPair, kPairUnroll> : gemv_route_kernel<T, 2, NORM, kEpiPlain, kUnroll>;
    case 4: return pair ? gemv_route_kernel<T, 4, NORM, kEpiPlainPair, kPairUnroll> : gemv_route_kernel<T, 4, NORM, kEpiPlain, kUnroll>;
    default: return pair ? gemv_route_kernel<T, 8, NORM, kEpiPlainPair, kPairUnroll> : gemv_route_kernel<T, 8, NORM, kEpiPlain, kUnroll>;
  }
}
template <typename T>
GemvKernel<T, T> route_kernel_of(int slices, int epi, bool exact) {
  return exact ? route_kernel_of<T, kNormExact>(slices, epi) : route_kernel_of<T, kNormNone>(slices, epi);
}

// The q/k-norm kernel of the qkv projection at S slices: the instantiations rms_norm_linear's
// kernel_of picks for a plain projection with the inline norm, so qkv is rms_norm_linear's.
template <typename T>
GemvKernel<T, T> qk_norm_kernel_of(int slices, int epi) {
  const bool pair = epi == kEpiPlainPair;
  switch (slices) {
    case 1: return pair ? gemv_qk_norm_kernel<T, 1, kEpiPlainPair, kPairUnroll> : gemv_qk_norm_kernel<T, 1, kEpiPlain, kUnroll>;
    case 2: return pair ? gemv_qk_norm_kernel<T, 2, kEpiPlainPair, kPairUnroll> : gemv_qk_norm_kernel<T, 2, kEpiPlain, kUnroll>;
    case 4: return pair ? gemv_qk_norm_kernel<T, 4, kEpiPlainPair, kPairUnroll> : gemv_qk_norm_kernel<T, 4, kEpiPlain, kUnroll>;
    default: return pair ? gemv_qk_norm_kernel<T, 8, kEpiPlainPair, kPairUnroll> : gemv_qk_norm_kernel<T, 8, kEpiPlain, kUnroll>;
  }
}

// Dynamic shared memory of a launch: the staged x * g.
size_t staged_smem(int slices, bool norm, int epi, int M, int n_in, size_t elem) {
  return norm && slices == 1 && (epi == kEpiGlu || epi == kEpiRope) ? size_t(M) * size_t(n_in) * elem : 0;
}

// Warps of this kernel resident on the whole GPU at once (its occupancy: registers, shared
// memory).
int resident_warps(const void* kernel, size_t smem) {
  int dev = 0, sms = 0, blocks = 0;
  SEAM_CUDA_CHECK(cudaGetDevice(&dev));
  SEAM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  SEAM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kWarps * 32, smem));
  return std::max(1, blocks) * kWarps * sms;
}

int max_slices_cap() {  // SEAM_GEMV_MAX_SLICES (1, 2, 4 or 8): a diagnostic cap
  static const int cap = env_choice("SEAM_GEMV_MAX_SLICES", kWarps, {1, 2, 4, 8});
  return cap;
}

// K slices per item: choose_gemv_slices (gemv_slices.h) over this instantiation's occupancy.
// The choice depends only on the shape and the fusion, and every step launches the same few
// shapes (each also asked by gemv_fusion_applies), so it is made once per shape.
template <typename T, typename TO, int M>
int slices_for(int n_out, int n_in, bool norm, int epi) {
  static std::mutex mu;
  static std::map<std::tuple<int, int, bool, int>, int> chosen;  // (n_out, n_in, norm, epi) -> slices
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_tuple(n_out, n_in, norm, epi);
  if (auto it = chosen.find(key); it != chosen.end()) return it->second;
  GemvSliceQuery q;
  q.n_items = n_out;
  q.n_vec = n_in / 8;
  q.sweep_vecs = 32 * row_unroll(epi);
  q.max_slices = max_slices_cap();
  q.staged_pair = staged_smem(1, norm, epi, M, n_in, sizeof(T)) > 0;
  const int slices = choose_gemv_slices(q, [&](int s) {
    return resident_warps(reinterpret_cast<const void*>(kernel_of<T, TO, M>(s, norm, epi)),
                          staged_smem(s, norm, epi, M, n_in, sizeof(T)));
  });
  chosen.emplace(key, slices);
  return slices;
}

template <typename T, typename TO, int M>
void launch_with_slices(const GemvArgs<T, TO>& a, int slices, int epi, cudaStream_t stream) {
  const bool norm = a.norm_w != nullptr;
  const size_t smem = staged_smem(slices, norm, epi, M, a.n_in, sizeof(T));
  const unsigned grid = div_up(a.n_out, kWarps / slices);
  if constexpr (std::is_same_v<T, TO> && M == 1) {
    if (a.route_counter != nullptr) {  // gemv_fusion_applies: a plain projection; a norm only exact
      const bool exact = a.normed_out != nullptr;
      launch_kernel(route_kernel_of<T>(slices, epi, exact), grid, kWarps * 32, exact ? size_t(a.n_in) * sizeof(T) : 0,
                    stream, a);
      SEAM_CUDA_CHECK_LAUNCH();
      g_route_launches.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (a.head_counters != nullptr) {  // gemv_fusion_applies: a plain projection with the inline norm
      launch_kernel(qk_norm_kernel_of<T>(slices, epi), grid, kWarps * 32, 0, stream, a);
      SEAM_CUDA_CHECK_LAUNCH();
      g_qk_norm_launches.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (a.post_counter != nullptr) {  // gemv_fusion_applies: a plain projection, no input norm
      launch_kernel(post_norm_kernel_of<T>(slices, epi), grid, kWarps * 32, 0, stream, a);
      SEAM_CUDA_CHECK_LAUNCH();
      g_post_norm_launches.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  launch_kernel(kernel_of<T, TO, M>(slices, norm, epi), grid, kWarps * 32, smem, stream, a);
  SEAM_CUDA_CHECK_LAUNCH();
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
  a.gelu = f.silu_mul && f.glu_act == Activation::gelu_tanh;
  int epi = kEpiPlain;
  if (f.silu_mul)
    epi = kEpiGlu;
  else if (f.rope_store)
    epi = kEpiRope;
  else if (plain_pair(w.size(0), w.size(1), sizeof(T)))
    epi = kEpiPlainPair;
  a.n_out = int(epi == kEpiPlain ? w.size(0) : w.size(0) / 2);
  a.n_in = int(w.size(1));
  if (f.post_norm.counter != nullptr) {
    // The product's slices are linear()'s (the same key: no norm, this epilogue), so out is
    // bit-identical to linear's.
    a.residual = f.post_norm.residual.ptr<T>();
    a.post_w = f.post_norm.weight.ptr<T>();
    a.post_eps = f.post_norm.eps;
    a.post_n = int(w.size(0));
    a.post_counter = f.post_norm.counter;
  }
  if (f.route.counter != nullptr) {
    a.route_ids = f.route.topk_ids.ptr<int32_t>();
    a.route_weights = f.route.topk_weights.ptr<float>();
    a.route_experts = int(w.size(0));
    a.route_k = int(f.route.topk_ids.size(1));
    a.route_renorm = f.route.renormalize;
    a.route_counter = f.route.counter;
    if (f.normed_out.defined()) a.normed_out = f.normed_out.ptr<T>();
  }
  if (f.rope_store || f.qk_norm.counters != nullptr) {
    const GemvFusion::RopeStore& rs = f.rope;
    a.positions = rs.positions.ptr<int32_t>();
    a.angles = RopeTables(rs.inv_freq, rs.inv_freq_long, rs.long_from, rs.inv_freq_lo, rs.inv_freq_long_lo).angles();
    a.rot_half = int(rs.inv_freq.size(0));
    a.k_cache = reinterpret_cast<T*>(rs.k_cache.data);
    a.v_cache = reinterpret_cast<T*>(rs.v_cache.data);
    a.slots = rs.slots.ptr<int32_t>();
    a.n_slots = rs.k_cache.size(0);
    a.n_heads = rs.n_heads;
    a.n_kv_heads = int(rs.k_cache.size(1));
    a.head_dim = int(rs.k_cache.size(2));
  }
  if (f.qk_norm.counters != nullptr) {
    a.q_norm_w = f.qk_norm.q_norm.ptr<T>();
    a.k_norm_w = f.qk_norm.k_norm.ptr<T>();
    a.head_counters = f.qk_norm.counters;
  }
  // The exact norm takes linear's slices (the product is linear(normed)'s, bit for bit).
  const bool slice_norm = a.norm_w != nullptr && !f.normed_out.defined();
  launch_with_slices<T, TO, M>(a, slices_for<T, TO, M>(a.n_out, a.n_in, slice_norm, epi), epi, stream);
}

// ---- expert-indexed launches (launch_gemv_experts) ----

// The experts' kernel at S slices: GLU (into x's dtype) at the pair unroll, as the dense GLU;
// plain products (into float32) two rows a warp at kPairUnroll or one at kUnroll. Only these
// pairings are instantiated (gemv_experts_applies).
// The GLU (64 registers at unroll 2, 88-90 at 4) and the single rows (54-56) fit four blocks
// without a bound; the plain pair is bounded by SEAM_GEMV_EXPERTS_MIN_BLOCKS: 4 (default: the
// dense kernel's occupancy, a few spilled bytes) or 1 (no bound: no spills, three blocks an SM),
// a diagnostic A/B until measured.
int experts_min_blocks() {
  static const int b = env_choice("SEAM_GEMV_EXPERTS_MIN_BLOCKS", 4, {1, 4});
  return b;
}

template <typename T, typename TO, int S>
GemvKernel<T, TO> experts_kernel_of(int epi) {
  if constexpr (std::is_same_v<T, TO>) {
    SEAM_ASSERT(epi == kEpiGlu);
    return pair_unroll() == 2 ? gemv_experts_kernel<T, TO, S, kEpiGlu, 2, 1>
                              : gemv_experts_kernel<T, TO, S, kEpiGlu, kUnroll, 1>;
  } else {
    SEAM_ASSERT(epi != kEpiGlu);
    if (epi == kEpiPlain) return gemv_experts_kernel<T, TO, S, kEpiPlain, kUnroll, 1>;
    return experts_min_blocks() == 4 ? gemv_experts_kernel<T, TO, S, kEpiPlainPair, kPairUnroll, 4>
                                     : gemv_experts_kernel<T, TO, S, kEpiPlainPair, kPairUnroll, 1>;
  }
}

// The combine-folded instance of experts_kernel_of's plain kernels (the same unroll and bound).
template <typename T, int S>
GemvKernel<T, float> experts_combine_kernel_of(int epi) {
  if (epi == kEpiPlain) return gemv_experts_combine_kernel<T, S, kEpiPlain, kUnroll, 1>;
  return experts_min_blocks() == 4 ? gemv_experts_combine_kernel<T, S, kEpiPlainPair, kPairUnroll, 4>
                                   : gemv_experts_combine_kernel<T, S, kEpiPlainPair, kPairUnroll, 1>;
}
template <typename T>
GemvKernel<T, float> experts_combine_kernel_of(int slices, int epi) {
  switch (slices) {
    case 1: return experts_combine_kernel_of<T, 1>(epi);
    case 2: return experts_combine_kernel_of<T, 2>(epi);
    case 4: return experts_combine_kernel_of<T, 4>(epi);
    default: return experts_combine_kernel_of<T, 8>(epi);
  }
}

template <typename T, typename TO>
GemvKernel<T, TO> experts_kernel_of(int slices, int epi) {
  switch (slices) {
    case 1: return experts_kernel_of<T, TO, 1>(epi);
    case 2: return experts_kernel_of<T, TO, 2>(epi);
    case 4: return experts_kernel_of<T, TO, 4>(epi);
    default: return experts_kernel_of<T, TO, 8>(epi);
  }
}

// K slices of an expert launch: the dense rule over its whole grid (n_slots x the items of one
// expert), at the experts kernel's occupancy; once per shape, as slices_for.
template <typename T, typename TO>
int experts_slices_for(int n_out, int n_slots, int n_in, int epi) {
  static std::mutex mu;
  static std::map<std::tuple<int, int, int, int>, int> chosen;  // (n_out, n_slots, n_in, epi) -> slices
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_tuple(n_out, n_slots, n_in, epi);
  if (auto it = chosen.find(key); it != chosen.end()) return it->second;
  GemvSliceQuery q;
  q.n_items = n_out * n_slots;
  q.n_vec = n_in / 8;
  q.sweep_vecs = 32 * row_unroll(epi);
  q.max_slices = max_slices_cap();
  const int slices = choose_gemv_slices(
      q, [&](int s) { return resident_warps(reinterpret_cast<const void*>(experts_kernel_of<T, TO>(s, epi)), 0); });
  chosen.emplace(key, slices);
  return slices;
}

template <typename T, typename TO>
bool launch_experts_typed(const Tensor& out, const Tensor& x, bool x_per_slot, const Tensor& w, const Tensor& ids,
                          bool glu, cudaStream_t stream, const GemvExpertsCombine* combine) {
  const int n_slots = int(ids.numel()), rows = int(w.size(1)), n_in = int(w.size(2));
  GemvArgs<T, TO> a{};
  a.out = out.ptr<TO>();
  a.x = x.ptr<T>();
  a.w = w.ptr<T>();
  a.early_load = false;  // the weights' address depends on the ids: after the PDL wait
  a.expert_ids = ids.ptr<int32_t>();
  a.n_experts = int(w.size(0));
  a.x_slot_div = x_per_slot ? 1 : int(ids.size(1));  // x's row for slot s: s, or its token s / k
  a.expert_stride = int64_t(rows) * n_in;
  a.x_slot_stride = x.stride[0];
  a.out_slot_stride = out.stride[0];
  // Plain products pair rows by the dense rule over all the slots' rows (halving the warps pays
  // where the whole grid is large); a pair stays within one expert's matrix.
  int epi = kEpiGlu;
  if (!glu) epi = rows % 2 == 0 && plain_pair(int64_t(rows) * n_slots, n_in, sizeof(T)) ? kEpiPlainPair : kEpiPlain;
  a.n_out = epi == kEpiPlain ? rows : rows / 2;
  a.n_in = n_in;
  const int slices = experts_slices_for<T, TO>(a.n_out, n_slots, n_in, epi);
  const dim3 grid(unsigned(div_up(a.n_out, kWarps / slices)), unsigned(n_slots));
  if constexpr (std::is_same_v<TO, float>) {
    // The folded combine: a counter per (token, tile); the products as below (same slices).
    if (combine != nullptr && x_per_slot && int64_t(ids.size(0)) * grid.x <= combine->n_counters) {
      a.combine_out = combine->out.ptr<T>();
      a.combine_out_stride = combine->out.stride[0];
      a.combine_weights = combine->topk_weights.ptr<float>();
      a.combine_counters = combine->counters;
      a.combine_k = int(ids.size(1));
      launch_kernel(experts_combine_kernel_of<T>(slices, epi), grid, dim3(kWarps * 32), 0, stream, a);
      SEAM_CUDA_CHECK_LAUNCH();
      g_combine_launches.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  launch_kernel(experts_kernel_of<T, TO>(slices, epi), grid, dim3(kWarps * 32), 0, stream, a);
  SEAM_CUDA_CHECK_LAUNCH();
  return false;
}

// slices_for over the runtime dtypes of one row of x.
int slices_for(DType x, DType out, int n_out, int n_in, bool norm, int epi) {
  if (x == DType::bf16) {
    if (out == DType::f32) return slices_for<__nv_bfloat16, float, 1>(n_out, n_in, norm, epi);
    return slices_for<__nv_bfloat16, __nv_bfloat16, 1>(n_out, n_in, norm, epi);
  }
  if (out == DType::f32) return slices_for<__half, float, 1>(n_out, n_in, norm, epi);
  return slices_for<__half, __half, 1>(n_out, n_in, norm, epi);
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
  if ((f.silu_mul || f.rope_store) &&
      slices_for(x.dtype, out.dtype, int(w.size(0) / 2), int(n_in), true, f.silu_mul ? kEpiGlu : kEpiRope) >
          pair_fusion_max_slices())
    return false;
  if (f.post_norm.counter != nullptr) {
    // One row of a plain projection into x's dtype, then the norm over out's whole row, read back
    // in 16-byte vectors (rms_norm_add's vector path): out, residual and the norm weight
    // contiguous, aligned, of n_out elements, a multiple of a vector.
    const GemvFusion::PostNorm& p = f.post_norm;
    const int64_t n_out = w.size(0), vec = 16 / int64_t(dtype_size(x.dtype));
    if (f.norm_weight.defined() || f.accumulate || f.silu_mul || f.rope_store || out.dtype != x.dtype ||
        x.size(0) != 1 || n_out % vec != 0 || !aligned16(out.data) || out.ndim != 2 || out.size(1) != n_out)
      return false;
    if (!(p.residual.defined() && p.residual.dtype == x.dtype && p.residual.ndim == 2 && p.residual.size(0) == 1 &&
          p.residual.size(1) == n_out && aligned16(p.residual.data) && p.weight.defined() &&
          p.weight.dtype == x.dtype && p.weight.contiguous() && p.weight.numel() == n_out && aligned16(p.weight.data)))
      return false;
  }
  if (f.normed_out.defined() && f.route.counter == nullptr) return false;  // the exact norm: route kernel only
  if (f.route.counter != nullptr) {
    // One row of a plain projection into x's dtype, routed by the warp routine.
    const GemvFusion::Route& r = f.route;
    const int64_t n_experts = w.size(0);
    if (f.norm_weight.defined() != f.normed_out.defined() || f.accumulate || f.silu_mul || f.rope_store ||
        f.post_norm.counter != nullptr || bias.defined() || out.dtype != x.dtype || x.size(0) != 1 || out.ndim != 2 ||
        out.size(0) != 1 || out.size(1) != n_experts || out.stride[1] != 1)
      return false;
    const Tensor& nd = f.normed_out;  // the exact norm writes it in whole vectors, as rms_norm's vector path
    if (nd.defined() && !(nd.dtype == x.dtype && nd.numel() == w.size(1) && nd.size(-1) == w.size(1) &&
                          nd.stride[nd.ndim - 1] == 1 && aligned16(nd.data)))
      return false;
    if (!(r.topk_ids.defined() && r.topk_ids.dtype == DType::i32 && r.topk_ids.ndim == 2 &&
          r.topk_ids.size(0) == 1 && r.topk_ids.contiguous() && r.topk_weights.defined() &&
          r.topk_weights.dtype == DType::f32 && r.topk_weights.ndim == 2 && r.topk_weights.size(0) == 1 &&
          r.topk_weights.size(1) == r.topk_ids.size(1) && r.topk_weights.contiguous()))
      return false;
    const int64_t k = r.topk_ids.size(1);
    if (k < 1 || k > n_experts || !moe_route_warp_applies(n_experts, k)) return false;
  }
  if (f.qk_norm.counters != nullptr) {
    // One row of a plain projection with the inline norm into x's dtype; rope's caches and tables.
    const GemvFusion::RopeStore& rs = f.rope;
    const GemvFusion::QkNorm& qk = f.qk_norm;
    if (!f.norm_weight.defined() || f.rope_store || f.silu_mul || f.accumulate || f.post_norm.counter != nullptr ||
        f.route.counter != nullptr || out.dtype != x.dtype || x.size(0) != 1 || out.ndim != 2 || out.size(0) != 1 ||
        out.size(1) != w.size(0) || out.stride[1] != 1)
      return false;
    const bool caches = rs.k_cache.ndim == 3 && rs.v_cache.ndim == 3 && rs.k_cache.contiguous() &&
                        rs.v_cache.contiguous() && rs.k_cache.dtype == x.dtype && rs.v_cache.dtype == x.dtype &&
                        rs.v_cache.size(0) == rs.k_cache.size(0) && rs.v_cache.size(1) == rs.k_cache.size(1) &&
                        rs.v_cache.size(2) == rs.k_cache.size(2);
    if (!caches) return false;
    const int64_t d = rs.k_cache.size(2), kv = rs.k_cache.size(1);
    if (d % 2 != 0 || d < kWarps || rs.n_heads < 1 || w.size(0) != (rs.n_heads + 2 * kv) * d ||
        rs.n_heads + 2 * kv > qk.n_counters)
      return false;
    for (const Tensor* nw : {&qk.q_norm, &qk.k_norm})
      if (!(nw->defined() && nw->dtype == x.dtype && nw->contiguous() && nw->numel() == d)) return false;
    const int64_t rh = rs.inv_freq.defined() ? rs.inv_freq.size(0) : 0;
    if (rh < 1 || 2 * rh > d || (rs.inv_freq_long.defined() && rs.inv_freq_long.size(0) != rh)) return false;
    for (const Tensor* lo : {&rs.inv_freq_lo, &rs.inv_freq_long_lo})
      if (lo->defined() && lo->size(0) != rh) return false;
    if (!(rs.positions.defined() && rs.positions.numel() >= 1 && rs.slots.defined() && rs.slots.numel() >= 1))
      return false;
  }
  if (f.rope_store) {
    const GemvFusion::RopeStore& rs = f.rope;
    const bool caches = rs.k_cache.ndim == 3 && rs.v_cache.ndim == 3 && rs.k_cache.contiguous() &&
                        rs.v_cache.contiguous() && rs.k_cache.dtype == x.dtype && rs.v_cache.dtype == x.dtype;
    if (!caches || f.silu_mul || f.accumulate || !f.norm_weight.defined() || out.dtype != x.dtype) return false;
    const int64_t d = rs.k_cache.size(2), kv = rs.k_cache.size(1);
    if (d % 2 != 0 || w.size(0) != (rs.n_heads + 2 * kv) * d || rs.v_cache.size(1) != kv || rs.v_cache.size(2) != d ||
        rs.v_cache.size(0) != rs.k_cache.size(0))
      return false;
    const int64_t rh = rs.inv_freq.defined() ? rs.inv_freq.size(0) : 0;
    if (rh < 1 || 2 * rh > d || (rs.inv_freq_long.defined() && rs.inv_freq_long.size(0) != rh)) return false;
    for (const Tensor* lo : {&rs.inv_freq_lo, &rs.inv_freq_long_lo})
      if (lo->defined() && lo->size(0) != rh) return false;
  }
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

bool gemv_experts_applies(const Tensor& out, const Tensor& x, bool x_per_slot, const Tensor& w, const Tensor& ids,
                          bool glu) {
  const bool half = x.dtype == DType::bf16 || x.dtype == DType::f16;
  if (!half || w.dtype != x.dtype || w.ndim != 3 || !w.contiguous() || !aligned16(w.data) || w.size(2) % 8 != 0 ||
      ids.dtype != DType::i32 || ids.ndim != 2 || !ids.contiguous() || x.ndim != 2 || out.ndim != 2)
    return false;
  const int64_t n_slots = ids.numel(), rows = w.size(1), n_in = w.size(2);
  const int64_t n_out = glu ? rows / 2 : rows;
  if (n_slots < 1 || n_slots > 65535 || w.size(0) < 1 || w.size(0) * rows >= (int64_t(1) << 31) ||
      n_out * n_slots >= (int64_t(1) << 31) ||  // the slice rule's items
      n_in >= (int64_t(1) << 31) || x.size(1) != n_in || !rows_vectorizable(x, n_in) ||
      x.size(0) < (x_per_slot ? n_slots : ids.size(0)) || out.size(0) < n_slots || out.size(1) != n_out ||
      out.stride[1] != 1)
    return false;
  return glu ? rows % 2 == 0 && out.dtype == x.dtype : out.dtype == DType::f32;
}

bool launch_gemv_experts(const Tensor& out, const Tensor& x, bool x_per_slot, const Tensor& w, const Tensor& ids,
                         bool glu, cudaStream_t stream, const GemvExpertsCombine* combine) {
  SEAM_ASSERT(gemv_experts_applies(out, x, x_per_slot, w, ids, glu));
  if (w.size(1) == 0) return false;
  if (combine != nullptr) {
    const GemvExpertsCombine& c = *combine;
    const int64_t n = ids.size(0), k = ids.size(1);
    const bool ok = !glu && c.counters != nullptr && c.out.defined() && c.out.dtype == x.dtype && c.out.ndim == 2 &&
                    c.out.size(0) == n && c.out.size(1) == w.size(1) && c.out.stride[1] == 1 &&
                    c.topk_weights.defined() && c.topk_weights.dtype == DType::f32 && c.topk_weights.ndim == 2 &&
                    c.topk_weights.size(0) == n && c.topk_weights.size(1) == k && c.topk_weights.contiguous();
    if (!ok) combine = nullptr;
  }
  if (x.dtype == DType::bf16) {
    if (glu) return launch_experts_typed<__nv_bfloat16, __nv_bfloat16>(out, x, x_per_slot, w, ids, glu, stream, nullptr);
    return launch_experts_typed<__nv_bfloat16, float>(out, x, x_per_slot, w, ids, glu, stream, combine);
  }
  if (glu) return launch_experts_typed<__half, __half>(out, x, x_per_slot, w, ids, glu, stream, nullptr);
  return launch_experts_typed<__half, float>(out, x, x_per_slot, w, ids, glu, stream, combine);
}

int64_t gemv_post_norm_launches() { return g_post_norm_launches.load(std::memory_order_relaxed); }
int64_t gemv_route_launches() { return g_route_launches.load(std::memory_order_relaxed); }
int64_t gemv_experts_combine_launches() { return g_combine_launches.load(std::memory_order_relaxed); }
int64_t gemv_qk_norm_launches() { return g_qk_norm_launches.load(std::memory_order_relaxed); }

}  // namespace seam::cuda
