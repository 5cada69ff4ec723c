// The tail of the batch-1 qkv GEMV's q/k-norm kernel (gemv.cu, GemvFusion::qk_norm): the last
// block to finish a head's d rows normalises, rotates and stores that head (q, k) or copies it to
// the cache (v), as qk_norm_rope_store's kernel does, so that launch drops out. Included by
// gemv.cu only.
#pragma once
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/qk_norm_rope_head.cuh"

namespace seam::cuda {

// Where the tail finishes heads: the token's row of [q heads | k heads | v heads] (the GEMV's
// out, one row), the norms, the rotary tables at the token's position and its KV slot.
template <typename T>
struct QkTail {
  T* qkv;
  const T* q_norm;
  const T* k_norm;
  float eps;
  int n_heads, n_kv_heads, d, half;
  const int32_t* positions;  // [1]
  RopeAngles angles;
  T* k_cache;  // [n_slots, n_kv_heads, d]
  T* v_cache;
  const int32_t* slots;  // [1]
  int64_t n_slots;
  unsigned* counters;  // [n_heads + 2 n_kv_heads]: rows of each head written; zero between launches
};

// Called by every thread of every block once the block's rows of qkv are written. The block's
// rows are items [blockIdx.x * kItems, + kItems) of n_out, each kRowsPerItem rows (item, item +
// n_out): the plain or paired epilogue's rows, at most two heads a run of rows (d >= kItems).
// Thread 0 adds the block's row count to each head it touched (after the block's barrier and a
// fence, as post_norm_tail counts blocks); the block whose add completes a head's d rows takes the
// head, zeroes its counter for the next launch, fences, and one warp a finished head runs
// qk_norm_rope_store_head on it, reading the values back from L2.
template <typename T, int kItems, int kRowsPerItem>
__device__ __forceinline__ void qk_norm_tail(const QkTail<T>& a, int n_out) {
  __shared__ int finished[2 * kRowsPerItem];
  __shared__ int n_finished;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    int nf = 0;
    const int d = a.d, item0 = int(blockIdx.x) * kItems, n_items = min(kItems, n_out - item0);
#pragma unroll
    for (int q = 0; q < kRowsPerItem; ++q) {
      const int r0 = item0 + q * n_out, r1 = r0 + n_items;  // rows [r0, r1)
      for (int h = r0 / d; h * d < r1; ++h) {
        const unsigned cnt = unsigned(min(r1, (h + 1) * d) - max(r0, h * d));
        if (atomicAdd(a.counters + h, cnt) + cnt == unsigned(d)) {
          a.counters[h] = 0u;  // every row of the head has counted in: zero for the next launch
          finished[nf++] = h;
        }
      }
    }
    if (nf > 0) __threadfence();  // the other blocks' rows before this block's reads
    n_finished = nf;
  }
  __syncthreads();
  const int warp = int(threadIdx.x >> 5);
  if (warp >= n_finished) return;  // warp-uniform
  const int head = finished[warp], n_qk = a.n_heads + a.n_kv_heads, d = a.d;
  const int64_t slot = a.slots[0];
  const bool store = slot >= 0 && slot < a.n_slots;
  const int64_t cache_row = (slot * a.n_kv_heads) * d;
  QkHead<T> h;
  h.x = a.qkv + int64_t(head) * d;
  h.eps = a.eps;
  h.d = d;
  h.half = a.half;
  h.position = a.positions[0];
  h.angles = a.angles;
  if (head >= n_qk) {  // v
    h.w = nullptr;
    h.cache = store ? a.v_cache + cache_row + int64_t(head - n_qk) * d : nullptr;
  } else {
    const bool is_q = head < a.n_heads;
    h.w = is_q ? a.q_norm : a.k_norm;
    h.cache = !is_q && store ? a.k_cache + cache_row + int64_t(head - a.n_heads) * d : nullptr;
  }
  // __ldcg: L2, where the other blocks wrote their rows.
  qk_norm_rope_store_head(h, [](const T* p) { return __ldcg(p); });
}

}  // namespace seam::cuda
