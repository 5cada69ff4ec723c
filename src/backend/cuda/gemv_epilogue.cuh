// Device code both batch-1 GEMV kernels share (gemv.cu, gemv_bulk.cu): unpacking a 16-byte
// vector, the weight rows of an item, and writing an item's output from its sums.
#pragma once
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/gemv_args.h"

namespace seam::cuda {

template <typename T>
__device__ __forceinline__ void unpack(const uint4& raw, float (&f)[8]) {
  const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
  for (int i = 0; i < 8; ++i) f[i] = to_float(e[i]);
}

// Weight row q (< gemv_rows(EPI)) of item `item`. RoPE pairs row i of a head with row
// i + head_dim / 2 (HF rotate_half); GLU pairs gate row j with up row n_out + j.
template <int EPI, typename T, typename TO>
__device__ __forceinline__ int64_t gemv_item_row(const GemvArgs<T, TO>& a, int item, int q) {
  if constexpr (EPI == kEpiRope) {
    const int half = a.head_dim / 2;
    return int64_t(item / half) * a.head_dim + item % half + q * half;
  } else {
    return int64_t(item) + int64_t(q) * a.n_out;
  }
}

// Writes item `item` of x row r from its weight rows' sums `acc` (before the norm's 1 / rms):
// the epilogues of GemvEpilogue. `prev` is out's old value (accumulate; else 0).
template <int EPI, typename T, typename TO>
__device__ __forceinline__ void gemv_write_item(const GemvArgs<T, TO>& a, int r, int item,
                                                const float (&acc)[gemv_rows(EPI)], float inv_rms, float prev) {
  if constexpr (EPI == kEpiRope) {
    const int d = a.head_dim, half = d / 2, head = item / half, i = item % half;
    const int64_t rows[2] = {gemv_item_row<EPI>(a, item, 0), gemv_item_row<EPI>(a, item, 1)};
    T* out = reinterpret_cast<T*>(a.out) + r * a.out_stride;
    float y[2];
#pragma unroll
    for (int q = 0; q < 2; ++q)  // rounded like the qkv product rope_kernel reads
      y[q] = to_float(from_float<T>(acc[q] * inv_rms + (a.bias != nullptr ? to_float(a.bias[rows[q]]) : 0.f)));
    if (head < a.n_heads + a.n_kv_heads) {  // q or k: rotate the pair
      float sn, cs;
      sincosf(float(a.positions[r]) * a.inv_freq[i], &sn, &cs);
      const float x0 = y[0], x1 = y[1];
      y[0] = x0 * cs - x1 * sn;
      y[1] = x1 * cs + x0 * sn;
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
        c[i] = t0;
        c[i + half] = t1;
      }
    }
  } else {
    const float b = a.bias != nullptr ? to_float(a.bias[item]) : 0.f;
    float y = acc[0] * inv_rms;
    if constexpr (EPI == kEpiGlu) {
      const float up = acc[1] * inv_rms;
      y = y / (1.f + __expf(-y)) * up;
    }
    y += b + prev;
    a.out[r * a.out_stride + item] = from_float<TO>(y);
  }
}

}  // namespace seam::cuda
