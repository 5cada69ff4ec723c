// The bf16 / f16 weight-streaming GEMV's kernel body (gemv.h), shared by its two launchers:
// gemv.cu (launch_gemv: the dense projections and their fusions) and gemv_experts.cu
// (launch_gemv_experts: one expert's matrix per grid row). Each wraps gemv_body in its own
// __global__ kernels; the host helpers below pick the instantiation and the K slices the same way
// for both. Included by those two files only.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>

#include "backend/cuda/activation.cuh"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/diagnostic_switch.h"
#include "backend/cuda/gemv.h"
#include "backend/cuda/gemv_slices.h"
#include "backend/cuda/rope_rotate.cuh"

namespace seam::cuda::gemv_detail {

constexpr int kWarps = 8;   // per block; the block's rows times the K slices of each row
constexpr int kUnroll = 4;  // 16-byte weight loads in flight per lane before any math


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
      unpack_vec<T>(__ldg(reinterpret_cast<const uint4*>(a.norm_w) + v), gf);
#pragma unroll
      for (int r = 0; r < M; ++r) {
        float xf[8];
        unpack_vec<T>(__ldg(reinterpret_cast<const uint4*>(a.x + r * a.x_stride) + v), xf);
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
        if constexpr (NORM == kNormInline) unpack_vec<T>(__ldg(reinterpret_cast<const uint4*>(a.norm_w) + j), gf);
#pragma unroll
        for (int r = 0; r < M; ++r) {
          float xf[8];
          if constexpr (NORM == kNormStaged || NORM == kNormExact) {
            unpack_vec<T>(reinterpret_cast<const uint4*>(xs + r * n_in)[j], xf);
          } else {
            unpack_vec<T>(__ldg(reinterpret_cast<const uint4*>(a.x + r * a.x_stride) + j), xf);
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
            unpack_vec<T>(cur[q][u], wf);
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

// Vectors per row per sweep in the paired kernels (two rows a warp, so 2 x kPairUnroll vectors
// in flight per lane, as many as a single row's kUnroll). Halving them from 4 cut the paired
// kernels' registers from 91-108 to 58-74, so more of their blocks are resident: measured on the
// H200 (batch-1 decode) Llama-3.2-1B 0.795 ms against 0.828 at 4, Qwen2.5-0.5B 0.601 / 0.611,
// Qwen3-0.6B 0.864 / 0.871, Llama-3.1-8B 4.172 / 4.180. SEAM_GEMV_PAIR_UNROLL=2|4 overrides it.
constexpr int kPairUnroll = 2;
inline int pair_unroll() {
  static const int u = env_choice("SEAM_GEMV_PAIR_UNROLL", kPairUnroll, {2, 4});
  return u;
}

// Plain projections (no GLU / RoPE epilogue) stream two rows a warp where gemv_pairs_plain_rows
// (gemv_slices.h) says so. SEAM_GEMV_PLAIN_PAIR=0 never pairs them, 2 pairs every even n_out
// (diagnostic switches; 1, the rule, is the default).
inline bool plain_pair(int64_t n_out, int64_t n_in, size_t elem_bytes) {
  static const int mode = env_choice("SEAM_GEMV_PLAIN_PAIR", 1, {0, 1, 2});
  if (mode == 0) return false;
  return mode == 2 ? n_out % 2 == 0 : gemv_pairs_plain_rows(n_out, n_in, elem_bytes);
}

// Vectors per weight row per sweep of the instantiation kernel_of picks: kUnroll for one row a
// warp, the pair unroll for two (the plain pair always kPairUnroll, as kernel_of instantiates it).
inline int row_unroll(int epi) {
  if (epi == kEpiPlainPair) return kPairUnroll;
  return epi == kEpiPlain ? kUnroll : pair_unroll();
}

template <typename T, typename TO>
using GemvKernel = void (*)(GemvArgs<T, TO>);

// Warps of this kernel resident on the whole GPU at once (its occupancy: registers, shared
// memory).
inline int resident_warps(const void* kernel, size_t smem) {
  int dev = 0, sms = 0, blocks = 0;
  SEAM_CUDA_CHECK(cudaGetDevice(&dev));
  SEAM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  SEAM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kWarps * 32, smem));
  return std::max(1, blocks) * kWarps * sms;
}

inline int max_slices_cap() {  // SEAM_GEMV_MAX_SLICES (1, 2, 4 or 8): a diagnostic cap
  static const int cap = env_choice("SEAM_GEMV_MAX_SLICES", kWarps, {1, 2, 4, 8});
  return cap;
}

}  // namespace seam::cuda::gemv_detail
