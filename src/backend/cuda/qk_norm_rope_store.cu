#include "backend/cuda/qk_norm_rope_store.h"

#include <algorithm>
#include <type_traits>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/diagnostic_switch.h"
#include "backend/cuda/flash_mma.cuh"  // cp_async_16
#include "backend/cuda/qk_norm_rope_head.cuh"

namespace seam::cuda {

namespace {

constexpr int kWarps = 8;               // per block: one head each
constexpr int kSharedMaxHeadDim = 256;  // the shared-angle form's NV <= 8 values a lane

template <typename T>
struct QkArgs {
  T* q;  // [n, n_heads, d], row stride q_stride
  int64_t q_stride;
  T* k;  // [n, n_kv_heads, d]
  int64_t k_stride;
  const T* v;  // [n, n_kv_heads, d]
  int64_t v_stride;
  const T* q_norm;  // [d]
  const T* k_norm;  // [d]
  float eps;
  int n_heads, n_kv_heads, d;
  const int32_t* positions;      // [n]
  RopeAngles angles;             // the rotary tables (rope_angle.h)
  int half;                      // rotary_dim / 2: dims [2 half, d) pass through
  T* k_cache;                    // [n_slots, n_kv_heads, d]
  T* v_cache;
  const int32_t* slots;          // [n]
  int64_t n_slots;
};

// Grid (token, head group): warp w of block (tok, g) owns head g * kWarps + w of the token's
// [q heads | k heads | v heads] and finishes it with qk_norm_rope_store_head (qk_norm_rope_head.cuh:
// norm, RoPE and the KV store of a q or k head in place; a v head copied to the cache).
template <typename T>
__global__ void __launch_bounds__(kWarps * 32) qk_norm_rope_store_kernel(QkArgs<T> a) {
  pdl_begin();
  const int64_t tok = blockIdx.x;
  const int head = blockIdx.y * kWarps + (threadIdx.x >> 5);
  const int n_qk = a.n_heads + a.n_kv_heads;
  if (head >= n_qk + a.n_kv_heads) return;  // warp-uniform; no block barrier below
  const int d = a.d;
  const int64_t slot = a.slots[tok];
  const bool store = slot >= 0 && slot < a.n_slots;
  const int64_t cache_row = (slot * a.n_kv_heads) * d;
  QkHead<T> h;
  h.eps = a.eps;
  h.d = d;
  h.half = a.half;
  h.position = a.positions[tok];
  h.angles = a.angles;
  if (head >= n_qk) {  // v: a plain copy
    const int vh = head - n_qk;
    h.x = const_cast<T*>(a.v + tok * a.v_stride + int64_t(vh) * d);  // read only (w null)
    h.w = nullptr;
    h.cache = store ? a.v_cache + cache_row + int64_t(vh) * d : nullptr;
  } else {
    const bool is_q = head < a.n_heads;
    h.x = is_q ? a.q + tok * a.q_stride + int64_t(head) * d : a.k + tok * a.k_stride + int64_t(head - a.n_heads) * d;
    h.w = is_q ? a.q_norm : a.k_norm;
    h.cache = !is_q && store ? a.k_cache + cache_row + int64_t(head - a.n_heads) * d : nullptr;
  }
  qk_norm_rope_store_head(h, [](const T* p) { return *p; });
}

// The shared-angle form (QkNormRopeKernel::shared_angles). The per-head kernel above computes
// each rotary pair's angle and sincos in every q and k head of a token (36 times a token at
// Qwen3-30B-A3B's 32 + 4 heads), a chain of double-precision reduction and sincosf that made it
// latency-bound at prefill sizes (~80 us a layer at 4,096 tokens against ~22 us of bytes: 88 MB).
// Here a block's threads compute its token's cos / sin once into shared memory while the head
// loads are in flight (as rope.cu), and each warp reads its head from global memory once (NV values a
// lane, all loads issued before any use) instead of twice. Its arithmetic is the per-head
// function's (qk_norm_rope_head.cuh's helpers, the same sincosf of the same angle, rope_rotate),
// in the same order, so both forms store the same bits (cuda_qk_norm_rope_store_test).
// Shared memory: cos [half], sin [half], then each warp's normed head [kWarps][d] (float), which
// lets a lane's rotary pairs and pass-through dims be any dims (partial rotary, half % 32 != 0).
template <typename T, int NV>
__global__ void __launch_bounds__(kWarps * 32) qk_norm_rope_store_shared_kernel(QkArgs<T> a) {
  pdl_begin();
  extern __shared__ float smem[];
  const int half = a.half, d = a.d;
  float* cs = smem;  // [2 half]: cos then sin
  const int warp = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31);
  float* sn = smem + 2 * half + warp * d;  // this warp's normed head
  const int64_t tok = blockIdx.x;
  const int head = int(blockIdx.y) * kWarps + warp;
  const int n_qk = a.n_heads + a.n_kv_heads;
  const bool active = head < n_qk + a.n_kv_heads;  // warp-uniform
  const bool is_v = head >= n_qk, is_q = head < a.n_heads;
  const T* x = nullptr;
  if (active)
    x = is_v   ? a.v + tok * a.v_stride + int64_t(head - n_qk) * d
        : is_q ? a.q + tok * a.q_stride + int64_t(head) * d
               : a.k + tok * a.k_stride + int64_t(head - a.n_heads) * d;
  // The head's values, lane l holding dims l, l + 32, ... (< d), raw (a v head is copied as its
  // bits): every load issued before the angle chain below, whose latency they then overlap.
  T xr[NV];
#pragma unroll
  for (int m = 0; m < NV; ++m) {
    const int j = lane + 32 * m;
    if (active && j < d) xr[m] = x[j];
  }
  const int position = a.positions[tok];
  for (int i = int(threadIdx.x); i < half; i += int(blockDim.x)) {
    float s, c;
    sincosf(a.angles.angle(position, i), &s, &c);  // as the per-head kernel (and rope_kernel)
    cs[i] = c;
    cs[half + i] = s;
  }
  __syncthreads();  // the only block barrier: inactive warps leave after it
  if (!active) return;
  const int64_t slot = a.slots[tok];
  const bool store = slot >= 0 && slot < a.n_slots;
  const int64_t cache_row = (slot * a.n_kv_heads) * d;
  if (is_v) {  // a plain copy
    if (!store) return;
    T* c = a.v_cache + cache_row + int64_t(head - n_qk) * d;
#pragma unroll
    for (int m = 0; m < NV; ++m)
      if (lane + 32 * m < d) c[lane + 32 * m] = xr[m];
    return;
  }
  float xv[NV];
  float ss = 0.f;
#pragma unroll
  for (int m = 0; m < NV; ++m) {
    xv[m] = lane + 32 * m < d ? to_float(xr[m]) : 0.f;
    if (lane + 32 * m < d) ss = qk_norm_square_add(ss, xv[m]);
  }
  ss = warp_sum(ss);
  const float scale = qk_norm_scale(ss, d, a.eps);
  const T* w = is_q ? a.q_norm : a.k_norm;
#pragma unroll
  for (int m = 0; m < NV; ++m) {
    const int j = lane + 32 * m;
    if (j < d) sn[j] = qk_normed<T>(xv[m], scale, w[j]);
  }
  __syncwarp();  // a lane's pairs are other lanes' dims
  T* cache = !is_q && store ? a.k_cache + cache_row + int64_t(head - a.n_heads) * d : nullptr;
  qk_rope_store(
      const_cast<T*>(x), cache, d, half, lane, [&](int j) { return sn[j]; },
      [&](int i, float& s, float& c) { c = cs[i], s = cs[half + i]; });
}

// The staged form (QkNormRopeKernel::staged). The shared-angle kernel above still reads and
// writes every value as one 2-byte access a lane and holds only one token's ~10 KB of heads in
// flight a block, most of a block's life spent in its dependent chain (sum of squares, norm,
// RoPE) with no load outstanding: ~1.5 TB/s at prefill sizes (the twenty-eighth pass: 60.6 us
// alone for 88 MB at 4,096 tokens of Qwen3-30B-A3B). Here a block takes a few tokens; all their
// heads ([q | k | v] rows, 16-byte pieces) are copied to shared memory by cp.async at once, the
// cos / sin of each token computed meanwhile; each warp then finishes heads from shared memory
// with the shared-angle kernel's arithmetic in the same order (qk_norm_rope_head.cuh's helpers:
// the lane-strided sum of squares, warp_sum, qk_normed, rope_rotate), writing the results back in
// place in shared memory, and the block stores q, k and the cache rows as 16-byte pieces. Same
// values, same rounding, so the three forms store the same bits (cuda_qk_norm_rope_store_test).
// Needs 16-byte aligned rows (qk_norm_rope_staged_applies); shared memory: the tokens' heads
// [tok][n_all][d] (T), their cos / sin [tok][2 half], positions and slots [tok] each, then each
// warp's normed head [kWarps][d] (float).
struct StagedLayout {
  int tok;        // tokens a block
  size_t heads;   // bytes of one token's heads in shared memory
  size_t bytes;   // all of it
};

// elt: the activation dtype's bytes.
StagedLayout staged_layout(int64_t n_all, int64_t d, int64_t half, size_t elt) {
  StagedLayout l{};
  l.heads = size_t(n_all) * size_t(d) * elt;
  // ~24 KB of heads a block: at the kernel's 48 registers (ptxas, sm_90a) 5 blocks an SM keep
  // ~100 KB of loads in flight an SM, past what 4 TB/s needs (Little's law: ~30 KB an SM at ~1 us).
  l.tok = int(std::clamp<size_t>(size_t(24576) / std::max<size_t>(l.heads, 1), 1, 8));
  l.bytes = size_t(l.tok) * (l.heads + size_t(2 * half) * sizeof(float) + 2 * sizeof(int32_t)) +
            size_t(kWarps) * size_t(d) * sizeof(float);
  return l;
}

template <typename T>
__global__ void __launch_bounds__(kWarps * 32) qk_norm_rope_store_staged_kernel(QkArgs<T> a, int n, int tok_per_block,
                                                                                int heads_bytes) {
  pdl_begin();
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int d = a.d, half = a.half;
  const int n_qk = a.n_heads + a.n_kv_heads, n_all = n_qk + a.n_kv_heads;
  const int head_pieces = d * int(sizeof(T)) / 16, tok_pieces = n_all * head_pieces;
  const int64_t tok0 = int64_t(blockIdx.x) * tok_per_block;
  const int n_tok = n - tok0 < tok_per_block ? int(n - tok0) : tok_per_block;
  T* raw = reinterpret_cast<T*>(smem_raw);  // [tok_per_block][n_all][d]
  float* cs = reinterpret_cast<float*>(smem_raw + size_t(tok_per_block) * heads_bytes);  // [tok][2 half]
  int32_t* pos_s = reinterpret_cast<int32_t*>(cs + tok_per_block * 2 * half);
  int32_t* slot_s = pos_s + tok_per_block;
  float* sn_all = reinterpret_cast<float*>(slot_s + tok_per_block);
  const int warp = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31);
  float* sn = sn_all + warp * d;  // this warp's normed head

  // The head's row in global memory: q, k or v of token tok.
  auto row = [&](int64_t tok, int head) -> T* {
    return head < a.n_heads ? a.q + tok * a.q_stride + int64_t(head) * d
           : head < n_qk    ? a.k + tok * a.k_stride + int64_t(head - a.n_heads) * d
                            : const_cast<T*>(a.v) + tok * a.v_stride + int64_t(head - n_qk) * d;
  };
  // Every piece's copy issued before anything waits on one.
  for (int c = int(threadIdx.x); c < n_tok * tok_pieces; c += int(blockDim.x)) {
    const int t = c / tok_pieces, r = c - t * tok_pieces, head = r / head_pieces, p = r - head * head_pieces;
    flash::cp_async_16(reinterpret_cast<unsigned char*>(raw) + size_t(c) * 16,
                reinterpret_cast<const unsigned char*>(row(tok0 + t, head)) + size_t(p) * 16, true);
  }
  flash::cp_async_commit();
  for (int t = int(threadIdx.x); t < n_tok; t += int(blockDim.x)) {
    pos_s[t] = a.positions[tok0 + t];
    slot_s[t] = a.slots[tok0 + t];
  }
  __syncthreads();  // positions visible to the angle loop
  for (int i = int(threadIdx.x); i < n_tok * half; i += int(blockDim.x)) {
    const int t = i / half, j = i - t * half;
    float s, c;
    sincosf(a.angles.angle(pos_s[t], j), &s, &c);  // as the other forms (and rope_kernel)
    cs[t * 2 * half + j] = c;
    cs[t * 2 * half + half + j] = s;
  }
  flash::cp_async_wait<0>();
  __syncthreads();

  // Each warp finishes q and k heads (v heads are only stored) in shared memory, in place.
  constexpr int NV = kSharedMaxHeadDim / 32;
  for (int item = warp; item < n_tok * n_qk; item += kWarps) {
    const int t = item / n_qk, head = item - t * n_qk;
    T* x = raw + (size_t(t) * n_all + head) * d;
    float xv[NV];
    float ss = 0.f;
#pragma unroll
    for (int m = 0; m < NV; ++m) {
      const int j = lane + 32 * m;
      xv[m] = j < d ? to_float(x[j]) : 0.f;
      if (j < d) ss = qk_norm_square_add(ss, xv[m]);
    }
    ss = warp_sum(ss);
    const float scale = qk_norm_scale(ss, d, a.eps);
    const T* w = head < a.n_heads ? a.q_norm : a.k_norm;
#pragma unroll
    for (int m = 0; m < NV; ++m) {
      const int j = lane + 32 * m;
      if (j < d) sn[j] = qk_normed<T>(xv[m], scale, w[j]);
    }
    __syncwarp();  // a lane's pairs are other lanes' dims
    const float* cst = cs + t * 2 * half;
    qk_rope_store(
        x, static_cast<T*>(nullptr), d, half, lane, [&](int j) { return sn[j]; },
        [&](int i, float& s, float& c) { c = cst[i], s = cst[half + i]; });
    __syncwarp();  // sn is rewritten by the warp's next head
  }
  __syncthreads();

  // The stores, 16-byte pieces: q and k back in place, k and v to the token's slot.
  for (int c = int(threadIdx.x); c < n_tok * tok_pieces; c += int(blockDim.x)) {
    const int t = c / tok_pieces, r = c - t * tok_pieces, head = r / head_pieces, p = r - head * head_pieces;
    const uint4 v = reinterpret_cast<const uint4*>(raw)[c];
    if (head < n_qk) reinterpret_cast<uint4*>(row(tok0 + t, head))[p] = v;
    const int64_t slot = slot_s[t];
    if (head >= a.n_heads && slot >= 0 && slot < a.n_slots) {
      const bool is_k = head < n_qk;
      T* cache = (is_k ? a.k_cache : a.v_cache) + (slot * a.n_kv_heads + (is_k ? head - a.n_heads : head - n_qk)) * d;
      reinterpret_cast<uint4*>(cache)[p] = v;
    }
  }
}

// The vector form (QkNormRopeKernel::vector). ncu on the H200 (thirty-first pass) showed the
// shared-angle and staged kernels issue-bound, not waiting on memory: 75-79 % of issue slots busy,
// ~85 instructions an element (2-byte accesses a lane, lane-strided dims, integer index work),
// against 88 MB that 4 TB/s moves in 22 us. Here a head is L = d / kVec lanes, each holding kVec
// consecutive dims (one 16-byte load and store); a warp holds 32 / L heads. A lane's sum of
// squares is its kVec dims in order, then the group's butterfly (xor L/2 .. 1); the normed values
// (rounded to T, qk_normed) are swapped with the rotary partner lane (xor L/2: full rotary, so
// dim i pairs with i + d/2, held L/2 lanes on) as packed T, and each lane rotates its pairs with
// rope_rotate and keeps its own half. The block's tokens' cos / sin are computed once into
// shared memory while every head's load is in flight (a lane group holds up to kVecItems heads
// in registers). Not the per-head kernel's summation order: the two float32 sums of squares,
// hence the scales, may differ by a few roundings, so the stored values agree to T's rounding
// (at f32, to ~d float roundings), not bit for bit (cuda_qk_norm_rope_store_test derives the bound).
// Needs 16-byte rows, full rotary, L a power of two <= 32 (d 16..256 at 2 bytes, 8..128 at f32):
// qk_norm_rope_vector_applies.
constexpr int kVecItems = 8;  // heads a lane group holds in registers
constexpr int kVectorBlocks = 256;  // blocks the launcher aims for before packing several tokens a block

struct VectorLayout {
  int lanes = 0;  // L: lanes a head
  int tok = 0;    // tokens a block (0: the form does not apply to this head count)
};

VectorLayout vector_layout(int64_t n_all, int64_t d, size_t elt) {
  VectorLayout l;
  const int64_t v = 16 / int64_t(elt);
  if (d % v != 0) return l;
  const int64_t lanes = d / v;
  if (lanes < 2 || lanes > 32 || (lanes & (lanes - 1)) != 0) return l;  // a partner lane; one warp at most
  l.lanes = int(lanes);
  const int64_t groups = kWarps * 32 / lanes;
  l.tok = int(std::min<int64_t>(4, groups * kVecItems / std::max<int64_t>(n_all, 1)));
  return l;
}

template <typename T, int L>
__global__ void __launch_bounds__(kWarps * 32) qk_norm_rope_store_vector_kernel(QkArgs<T> a, int n, int tok_per_block) {
  pdl_begin();
  constexpr int V = kVec<T>, D = L * V, HALF = D / 2, G = kWarps * 32 / L;
  extern __shared__ float cs[];  // [tok][2 HALF]: cos then sin
  const int g = int(threadIdx.x) / L, gl = int(threadIdx.x) % L;
  const int warp_g0 = (int(threadIdx.x) & ~31) / L;  // the warp's first group
  const int n_qk = a.n_heads + a.n_kv_heads, n_all = n_qk + a.n_kv_heads;
  const int64_t tok0 = int64_t(blockIdx.x) * tok_per_block;
  const int n_tok = n - tok0 < tok_per_block ? int(n - tok0) : tok_per_block;
  const int n_items = n_tok * n_all;  // item = t * n_all + head
  auto row = [&](int64_t tok, int head) -> T* {
    return head < a.n_heads ? a.q + tok * a.q_stride + int64_t(head) * D
           : head < n_qk    ? a.k + tok * a.k_stride + int64_t(head - a.n_heads) * D
                            : const_cast<T*>(a.v) + tok * a.v_stride + int64_t(head - n_qk) * D;
  };
  // Every head's 16 bytes issued before the angle chain.
  uint4 raw[kVecItems];
#pragma unroll
  for (int m = 0; m < kVecItems; ++m) {
    const int item = g + m * G;
    if (item < n_items) {
      const int t = item / n_all;
      raw[m] = *reinterpret_cast<const uint4*>(row(tok0 + t, item - t * n_all) + gl * V);
    } else {
      raw[m] = make_uint4(0u, 0u, 0u, 0u);  // an idle lane's head: computed on, never stored
    }
  }
  for (int i = int(threadIdx.x); i < n_tok * HALF; i += kWarps * 32) {
    const int t = i / HALF, j = i % HALF;
    float s, c;
    sincosf(a.angles.angle(a.positions[tok0 + t], j), &s, &c);  // as the other forms (and rope_kernel)
    cs[t * 2 * HALF + j] = c;
    cs[t * 2 * HALF + HALF + j] = s;
  }
  __syncthreads();  // the only block barrier
  const bool lo = gl < L / 2;
  const int pair0 = (lo ? gl : gl - L / 2) * V;  // the pair index of this lane's first dim
#pragma unroll
  for (int m = 0; m < kVecItems; ++m) {
    if (warp_g0 + m * G >= n_items) break;  // warp-uniform: the shuffles below take the whole warp
    const int item = g + m * G;
    const bool active = item < n_items;
    const int t = active ? item / n_all : 0, head = active ? item - t * n_all : 0;
    const bool is_v = head >= n_qk, is_q = head < a.n_heads;
    // Every lane computes (v heads and idle lanes too, their results unused): the shuffles are the warp's.
    float x[V];
    unpack_vec<T>(raw[m], x);
    float ss = 0.f;
#pragma unroll
    for (int k = 0; k < V; ++k) ss = qk_norm_square_add(ss, x[k]);
#pragma unroll
    for (int o = L / 2; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    const float scale = qk_norm_scale(ss, D, a.eps);
    float w[V], y[V];
    load_vec<T>((is_q ? a.q_norm : a.k_norm) + gl * V, w);
#pragma unroll
    for (int k = 0; k < V; ++k) y[k] = qk_normed<T>(x[k], scale, from_float<T>(w[k]));
    const uint4 mine = pack_vec<T>(y);  // exact: y is already rounded to T
    uint4 other;
    other.x = __shfl_xor_sync(0xffffffffu, mine.x, L / 2);
    other.y = __shfl_xor_sync(0xffffffffu, mine.y, L / 2);
    other.z = __shfl_xor_sync(0xffffffffu, mine.z, L / 2);
    other.w = __shfl_xor_sync(0xffffffffu, mine.w, L / 2);
    if (!active) continue;
    const int64_t tok = tok0 + t;
    const int64_t slot = a.slots[tok];
    const bool store = slot >= 0 && slot < a.n_slots;
    if (is_v) {
      if (store)
        *reinterpret_cast<uint4*>(a.v_cache + (slot * a.n_kv_heads + (head - n_qk)) * D + gl * V) = raw[m];
      continue;
    }
    float p[V], r[V];
    unpack_vec<T>(other, p);
    const float* cst = cs + t * 2 * HALF + pair0;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      float r0, r1;
      // (x0, x1) = (dim i, dim i + HALF): this lane holds x0 in the low half, x1 in the high.
      if (lo) rope_rotate(y[k], p[k], cst[k], cst[HALF + k], r0, r1);
      else rope_rotate(p[k], y[k], cst[k], cst[HALF + k], r0, r1);
      r[k] = lo ? r0 : r1;
    }
    const uint4 out = pack_vec<T>(r);
    *reinterpret_cast<uint4*>(row(tok, head) + gl * V) = out;
    if (!is_q && store)
      *reinterpret_cast<uint4*>(a.k_cache + (slot * a.n_kv_heads + (head - a.n_heads)) * D + gl * V) = out;
  }
}

template <typename T>
void launch_typed(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_norm, const Tensor& k_norm,
                  float eps, const Tensor& positions, const RopeTables& t, const Tensor& k_cache,
                  const Tensor& v_cache, const Tensor& slots, QkNormRopeKernel kernel, cudaStream_t stream) {
  QkArgs<T> a{};
  a.q = q.ptr<T>();
  a.q_stride = q.stride[0];
  a.k = k.ptr<T>();
  a.k_stride = k.stride[0];
  a.v = v.ptr<T>();
  a.v_stride = v.stride[0];
  a.q_norm = q_norm.ptr<T>();
  a.k_norm = k_norm.ptr<T>();
  a.eps = eps;
  a.n_heads = int(q.size(1));
  a.n_kv_heads = int(k.size(1));
  a.d = int(q.size(2));
  a.positions = positions.ptr<int32_t>();
  a.angles = t.angles();
  a.half = int(t.inv_freq.size(0));
  a.k_cache = k_cache.ptr<T>();
  a.v_cache = v_cache.ptr<T>();
  a.slots = slots.ptr<int32_t>();
  a.n_slots = k_cache.size(0);
  const int n_heads_all = a.n_heads + 2 * a.n_kv_heads;
  const dim3 grid(unsigned(q.size(0)), unsigned((n_heads_all + kWarps - 1) / kWarps));
  // The token count is fixed for a graph's key, so a captured graph keeps its form on every replay.
  if (kernel == QkNormRopeKernel::by_tokens)
    kernel = q.size(0) >= kQkNormVectorTokens ? QkNormRopeKernel::vector : QkNormRopeKernel::shared_angles;
  if (kernel == QkNormRopeKernel::vector && qk_norm_rope_vector_applies(q, k, v, k_cache, v_cache, t)) {
    const VectorLayout l = vector_layout(n_heads_all, a.d, sizeof(T));
    const int n = int(q.size(0));
    // Fewer tokens a block than the layout holds while that leaves under kVectorBlocks blocks: a lane
    // group's heads are a serial chain (each its reduction and shuffles), so at few tokens more,
    // shorter blocks finish sooner (thirty-second pass, H100: 64 tokens 8.8 us in 22 blocks of 3, 4.7 in 64 of 1).
    const int tok = std::clamp(n / kVectorBlocks, 1, l.tok);
    const size_t smem = size_t(tok) * size_t(a.d) * sizeof(float);  // tok x 2 half cos / sin
    auto go = [&](auto lanes) {
      launch_kernel(qk_norm_rope_store_vector_kernel<T, decltype(lanes)::value>, dim3(div_up(n, tok)), kWarps * 32,
                    smem, stream, a, n, tok);
    };
    switch (l.lanes) {
      case 2: go(std::integral_constant<int, 2>{}); break;
      case 4: go(std::integral_constant<int, 4>{}); break;
      case 8: go(std::integral_constant<int, 8>{}); break;
      case 16: go(std::integral_constant<int, 16>{}); break;
      default: go(std::integral_constant<int, 32>{}); break;
    }
  } else if (kernel == QkNormRopeKernel::staged && qk_norm_rope_staged_applies(q, k, v, k_cache, v_cache)) {
    const StagedLayout l = staged_layout(n_heads_all, a.d, a.half, sizeof(T));
    const int n = int(q.size(0));
    launch_kernel(qk_norm_rope_store_staged_kernel<T>, dim3(div_up(n, l.tok)), kWarps * 32, l.bytes, stream, a, n,
                  l.tok, int(l.heads));
  } else if (kernel != QkNormRopeKernel::per_head && qk_norm_rope_shared_applies(a.d)) {
    const size_t smem = size_t(2 * a.half + kWarps * a.d) * sizeof(float);
    auto go = [&](auto nv) {
      launch_kernel(qk_norm_rope_store_shared_kernel<T, decltype(nv)::value>, grid, kWarps * 32, smem, stream, a);
    };
    if (a.d <= 32) go(std::integral_constant<int, 1>{});
    else if (a.d <= 64) go(std::integral_constant<int, 2>{});
    else if (a.d <= 128) go(std::integral_constant<int, 4>{});
    else go(std::integral_constant<int, 8>{});
  } else {
    launch_kernel(qk_norm_rope_store_kernel<T>, grid, kWarps * 32, 0, stream, a);
  }
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace

bool qk_norm_rope_shared_applies(int64_t d) { return d >= 1 && d <= kSharedMaxHeadDim; }

bool qk_norm_rope_staged_applies(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& k_cache,
                                 const Tensor& v_cache) {
  const int64_t d = q.size(2), n_all = q.size(1) + 2 * k.size(1);
  if (!qk_norm_rope_shared_applies(d) || !rows_vectorizable(q, d) || !rows_vectorizable(k, d) ||
      !rows_vectorizable(v, d) || !aligned16(k_cache.data) || !aligned16(v_cache.data))
    return false;
  // Within the default 48 KB a block (no opt-in attribute), at the largest rotary half (d / 2).
  return staged_layout(n_all, d, d / 2, dtype_size(q.dtype)).bytes <= size_t(48) * 1024;
}

bool qk_norm_rope_vector_applies(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& k_cache,
                                 const Tensor& v_cache, const RopeTables& t) {
  const int64_t d = q.size(2), n_all = q.size(1) + 2 * k.size(1);
  if (t.inv_freq.size(0) * 2 != d || !rows_vectorizable(q, d) || !rows_vectorizable(k, d) ||
      !rows_vectorizable(v, d) || !aligned16(k_cache.data) || !aligned16(v_cache.data))
    return false;
  return vector_layout(n_all, d, dtype_size(q.dtype)).tok >= 1;
}

QkNormRopeKernel qk_norm_rope_kernel_default() {
  // 1: shared_angles, the default (H200, 2026-12-05: Qwen3-30B-A3B prefill of 4,096 +0.6 % alone,
  // docs/performance.md, twenty-eighth pass), 0: per_head, 2: staged (built 2026-12-05 without a
  // device: not yet measured, so not the default; docs/performance.md, twenty-ninth pass).
  // 3: vector (built 2026-12-05 after the ncu reading) everywhere it applies.
  // 4: by_tokens, the default since the thirty-second pass (vector at prefill sizes: Qwen3-30B-A3B prefill
  // of 4,096 +0.8 % on the H200 and +0.9 % on an H100 against shared_angles, decode unchanged; vector
  // everywhere cost batch 1 +2.6 % on the H100; docs/performance.md).
  static const int v = env_choice("SEAM_QK_NORM_ROPE_KERNEL", 4, {0, 1, 2, 3, 4});
  return v == 4   ? QkNormRopeKernel::by_tokens
         : v == 3 ? QkNormRopeKernel::vector
         : v == 2 ? QkNormRopeKernel::staged
         : v == 1 ? QkNormRopeKernel::shared_angles
                  : QkNormRopeKernel::per_head;
}

void launch_qk_norm_rope_store(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_norm,
                               const Tensor& k_norm, float eps, const Tensor& positions, const RopeTables& t,
                               const Tensor& k_cache, const Tensor& v_cache, const Tensor& slots, cudaStream_t stream,
                               QkNormRopeKernel kernel) {
  if (q.size(0) == 0) return;
  // Both kernels store the activation dtype's values as they are (no E4M3 encoding: an FP8 cache
  // takes the backend's composed path with its KV scales); a cache of another dtype would be
  // written with the wrong element size.
  SEAM_CHECK(k_cache.dtype == q.dtype && v_cache.dtype == q.dtype, "qk_norm_rope_store: caches ",
             dtype_name(k_cache.dtype), " / ", dtype_name(v_cache.dtype), " must be q's dtype ", dtype_name(q.dtype));
  SEAM_DISPATCH_FLOAT_TYPES(q.dtype, T, "qk_norm_rope_store", [&] {
    launch_typed<T>(q, k, v, q_norm, k_norm, eps, positions, t, k_cache, v_cache, slots, kernel, stream);
  });
}

}  // namespace seam::cuda
