// One head of attention's q/k-norm input stage on one warp (the arithmetic of
// qk_norm_rope_store.cu's kernel): shared by that kernel and by the qkv GEMV's per-head tail
// (gemv.cu, GemvFusion::qk_norm), so the fused stage writes what the kernel writes, bit for bit.
#pragma once
#include <cstdint>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/rope_rotate.cuh"

namespace seam::cuda {

// What a warp needs to finish a head of one token's [q heads | k heads | v heads].
template <typename T>
struct QkHead {
  T* x;           // the head's d values (in place: q and k are normalised and rotated there)
  const T* w;     // q_norm or k_norm [d]; null for a v head
  T* cache;       // the head's row of the token's KV slot, or null (a q head, or no store)
  float eps;
  int d, half;    // half = rotary_dim / 2: dims [2 half, d) pass through
  int position;
  RopeAngles angles;
};

// The arithmetic every form of the stage shares (this head function, the GEMV's per-head tail
// through it, and qk_norm_rope_store.cu's shared-angle kernel), written once so they store the
// same bits: a lane's sum of squares adds its dims j = lane, lane + 32, ... in that order, each
// square as one explicit fma (what nvcc contracted `ss += f * f` to; explicit, so no instance can
// choose otherwise), then warp_sum's butterfly.
__device__ __forceinline__ float qk_norm_square_add(float ss, float f) { return __fmaf_rn(f, f, ss); }
// The head's RMS scale from its sum of squares (as rms_norm.cu).
__device__ __forceinline__ float qk_norm_scale(float ss, int d, float eps) { return 1.f / sqrtf(ss / float(d) + eps); }
// Dim j's normed value, rounded to T as the rms_norm kernel stores it.
template <typename T>
__device__ __forceinline__ float qk_normed(float x, float scale, T w) {
  return to_float(from_float<T>(x * scale * to_float(w)));
}

// The lane's share of a normed q or k head rotated and stored: each rotary pair (i, i + half),
// i = lane, lane + 32, ..., and each pass-through dim j >= 2 half, rounded to T, written to x and,
// with a cache (a k head's slot), there too. normed(j) gives dim j's normed value (qk_normed),
// cos_sin(i, s, c) pair i's sine and cosine (the same sincosf of the same angle in every form).
template <typename T, typename Normed, typename CosSin>
__device__ __forceinline__ void qk_rope_store(T* x, T* cache, int d, int half, int lane, Normed normed,
                                              CosSin cos_sin) {
  for (int i = lane; i < half; i += 32) {
    const float x0 = normed(i), x1 = normed(i + half);
    float s, c;
    cos_sin(i, s, c);
    float r0, r1;
    rope_rotate(x0, x1, c, s, r0, r1);  // rope_rotate.cuh: rope.cu's bits
    const T t0 = from_float<T>(r0), t1 = from_float<T>(r1);
    x[i] = t0;
    x[i + half] = t1;
    if (cache != nullptr) {
      cache[i] = t0;
      cache[i + half] = t1;
    }
  }
  for (int j = 2 * half + lane; j < d; j += 32) {
    const T t = from_float<T>(normed(j));
    x[j] = t;
    if (cache != nullptr) cache[j] = t;
  }
}

// The whole warp (32 lanes) finishes one head. A q or k head (w set): pass 1 sums the squares
// of its d values; pass 2 gives each lane whole rotary pairs (i, i + half) and pass-through dims,
// normalises them (rounded to T, as rms_norm writes them), rotates the pairs (rounded to T, as
// rope_kernel) and writes them back in place and, with a cache, to the KV slot. In place is safe:
// a head is one warp's, and every lane's pass-1 loads precede the warp_sum that every pass-2
// store follows. A v head (w null) is copied to the cache. load(p) reads one value of x.
template <typename T, typename Load>
__device__ __forceinline__ void qk_norm_rope_store_head(const QkHead<T>& h, Load load) {
  const int lane = threadIdx.x & 31;
  const int d = h.d;
  T* x = h.x;
  if (h.w == nullptr) {  // v: a plain copy
    if (h.cache == nullptr) return;
    for (int j = lane; j < d; j += 32) h.cache[j] = load(x + j);
    return;
  }
  const T* w = h.w;
  T* cache = h.cache;
  float ss = 0.f;
  for (int j = lane; j < d; j += 32) ss = qk_norm_square_add(ss, to_float(load(x + j)));
  ss = warp_sum(ss);
  const float scale = qk_norm_scale(ss, d, h.eps);
  auto normed = [&](int j) { return qk_normed<T>(to_float(load(x + j)), scale, w[j]); };
  auto cos_sin = [&](int i, float& s, float& c) { sincosf(h.angles.angle(h.position, i), &s, &c); };  // as rope_kernel
  qk_rope_store(x, cache, d, h.half, lane, normed, cos_sin);
}

}  // namespace seam::cuda
