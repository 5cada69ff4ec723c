// A row of 16-bit activations quantized to E4M3 from registers: the vectorised tail every
// FP8 activation producer shares (fp8_quantize.cu, fp8_rms_norm_quantize.cu,
// fp8_gated_act_quantize.cu). Each of the block's kThreads threads holds kChunks chunks of 8
// values as raw 16-byte vectors; chunk c (elements 8c .. 8c+7 of the row) is held by thread
// c % kThreads in slot c / kThreads. So the 16 chunks of a 128-wide group sit in 16
// consecutive lanes of one warp (kThreads is a multiple of 32), and the layout is
// rms_norm.cu's 16-byte vector walk (thread t, step s: elements 8 (t + s kThreads)), which
// keeps the producers' float sums in rms_norm.cu's order.
//
// Arithmetic is fp8_act.cuh's (bit-exact with fp8_cpu::quantize_row): the amax of the values
// as held (already rounded to T), the scale from fp8_act_scale, codes by IEEE division. Codes
// are stored 8 at a time (8-byte stores), so the row's codes must be 8-byte aligned: the
// callers take this path only for n_in % 8 == 0 and 16-byte aligned rows. Included by .cu
// files only.
#pragma once
#include <cstdint>
#include <type_traits>

#include "backend/cuda/cluster.cuh"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/fp8_act.cuh"

namespace seam::cuda {

template <typename T>
__device__ __forceinline__ float chunk_amax(const uint4& raw) {
  const T* e = reinterpret_cast<const T*>(&raw);
  float a = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) a = fmaxf(a, fabsf(to_float(e[i])));
  return a;
}

template <typename T>
__device__ __forceinline__ uint64_t chunk_codes(const uint4& raw, float s) {
  const T* e = reinterpret_cast<const T*>(&raw);
  uint64_t c = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) c |= uint64_t(fp8_act_code(to_float(e[i]), s)) << (8 * i);
  return c;
}

// Scales and codes of one row held as above. `scheme` is an Fp8ActScheme; `static_scale` its
// static per-tensor scale (read by the caller); scales are written [n_groups, n_rows]
// (token fastest), codes [row][n_in]. Every thread of the block must call it (block
// reductions); n_chunks = n_in / 8.
template <typename T, int kThreads, int kChunks>
__device__ __forceinline__ void quantize_row_chunks(const uint4 (&v)[kChunks], int n_chunks, int scheme,
                                                    float static_scale, float ub, uint8_t* codes_row, float* scales,
                                                    int64_t row, int64_t n_rows, float* scratch) {
  static_assert(kThreads % 32 == 0, "16-lane groups must not straddle warps");
  const int tid = threadIdx.x;
  if (scheme == int(Fp8ActScheme::dynamic_group128)) {
#pragma unroll
    for (int s = 0; s < kChunks; ++s) {
      const int c = s * kThreads + tid;
      float a = c < n_chunks ? chunk_amax<T>(v[s]) : 0.f;
#pragma unroll
      for (int o = 8; o > 0; o >>= 1) a = fmaxf(a, __shfl_xor_sync(0xffffffffu, a, o));  // 16 lanes: one group
      const float sc = fp8_act_scale(a, ub);
      if (c < n_chunks) {
        reinterpret_cast<uint64_t*>(codes_row)[c] = chunk_codes<T>(v[s], sc);
        if (c % 16 == 0) scales[int64_t(c / 16) * n_rows + row] = sc;
      }
    }
    return;
  }
  float sc = static_scale;
  if (scheme != int(Fp8ActScheme::static_per_tensor)) {
    float a = 0.f;
#pragma unroll
    for (int s = 0; s < kChunks; ++s)
      if (s * kThreads + tid < n_chunks) a = fmaxf(a, chunk_amax<T>(v[s]));
    sc = fp8_act_scale(block_max(a, scratch), ub);
  }
  if (tid == 0) scales[row] = sc;
#pragma unroll
  for (int s = 0; s < kChunks; ++s) {
    const int c = s * kThreads + tid;
    if (c < n_chunks) reinterpret_cast<uint64_t*>(codes_row)[c] = chunk_codes<T>(v[s], sc);
  }
}

// quantize_row_chunks' per-token dynamic scheme for a row spread over a cluster of kCluster CTAs of
// kThreads threads (sm_90, launched with clusters of kCluster along x): the cluster's threads are
// one row's kCluster * kThreads threads, thread t of CTA rank r holding chunk c in slot s where
// c = s * kCluster * kThreads + r * kThreads + t. The row's amax is each CTA's block_max, then the
// max of the kCluster CTAs' through distributed shared memory (`part`: one __shared__ float of the
// calling CTA); max is exact and order-free, so scale and codes are the one-CTA path's bits.
template <typename T, int kThreads, int kChunks, int kCluster>
__device__ __forceinline__ void quantize_row_chunks_cluster(const uint4 (&v)[kChunks], int n_chunks, float ub,
                                                            uint8_t* codes_row, float* scales, int64_t row,
                                                            float* scratch, float* part) {
  static_assert(kThreads % 32 == 0 && kCluster >= 2, "whole warps; a cluster of one is quantize_row_chunks");
  const uint32_t rank = cluster::cta_rank();
  const int vt = int(rank) * kThreads + int(threadIdx.x);
  float a = 0.f;
#pragma unroll
  for (int s = 0; s < kChunks; ++s)
    if (s * kCluster * kThreads + vt < n_chunks) a = fmaxf(a, chunk_amax<T>(v[s]));
  a = block_max(a, scratch);
  if (threadIdx.x == 0) *part = a;
  cluster::sync();  // every CTA's part written and visible to the cluster
  const uint32_t mine = static_cast<uint32_t>(__cvta_generic_to_shared(part));
#pragma unroll
  for (int r = 0; r < kCluster; ++r) a = fmaxf(a, cluster::load_shared_f32(cluster::map_shared(mine, uint32_t(r))));
  cluster::sync();  // no CTA exits (its shared memory gone) while another may still read its part
  const float sc = fp8_act_scale(a, ub);
  if (rank == 0 && threadIdx.x == 0) scales[row] = sc;
#pragma unroll
  for (int s = 0; s < kChunks; ++s) {
    const int c = s * kCluster * kThreads + vt;
    if (c < n_chunks) reinterpret_cast<uint64_t*>(codes_row)[c] = chunk_codes<T>(v[s], sc);
  }
}

// The chunk count a thread needs for a row of n_in values (n_in % 8 == 0) at kThreads threads,
// rounded up to the instantiated sizes 2, 4, 8, 16; 0 where the row is too long for them.
inline int fp8_row_chunks(int64_t n_in, int threads) {
  const int64_t per = (n_in / 8 + threads - 1) / threads;
  for (int k : {2, 4, 8, 16})
    if (per <= k) return k;
  return 0;
}

// Calls f(std::integral_constant<int, k>) for k = fp8_row_chunks(...) (2, 4, 8 or 16).
template <typename F>
void with_row_chunks(int k, F&& f) {
  switch (k) {
    case 2: return f(std::integral_constant<int, 2>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 8: return f(std::integral_constant<int, 8>{});
    default: return f(std::integral_constant<int, 16>{});
  }
}

// Whether a [n, n_in] producer can take the register path: 16-bit values, rows of whole
// 16-byte vectors, 8-byte aligned code rows, and a row short enough for 16 chunks a thread.
inline bool fp8_row_path_applies(int64_t elem_size, int64_t n_in, const uint8_t* codes, int threads) {
  return elem_size == 2 && n_in % 8 == 0 && (reinterpret_cast<uintptr_t>(codes) & 7) == 0 &&
         fp8_row_chunks(n_in, threads) != 0;
}

}  // namespace seam::cuda
