// What a batch-1 GEMV launch passes to its kernel, by value: shared by the two GEMV kernels
// (gemv.cu: weights streamed through registers; gemv_bulk.cu: weights streamed into shared
// memory by bulk copies). Host-compatible: no device code here (gemv_epilogue.cuh has it).
#pragma once
#include <cstdint>

namespace seam::cuda {

// What the kernel does with an item's sums (GemvFusion in gemv.h says when each applies).
//  * plain: out[item] = sum (* 1 / rms) + bias (+ out[item] when accumulate); one weight row.
//  * GLU: out[item] = silu(gate) * up; rows item and n_out + item of [gate | up].
//  * RoPE: the qkv projection; rows i and i + d/2 of one head, rotated (q, k) and stored to
//    the KV caches (k, v).
enum GemvEpilogue { kEpiPlain, kEpiGlu, kEpiRope };

#if defined(__CUDACC__)
#define SEAM_HOST_DEVICE __host__ __device__
#else
#define SEAM_HOST_DEVICE
#endif

// Weight rows one item reads.
constexpr SEAM_HOST_DEVICE int gemv_rows(int epi) { return epi == kEpiPlain ? 1 : 2; }

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
  int n_out, n_in;     // n_out: the items (rows; GLU: features; ROPE: rotary pairs)
  // ROPE: the qkv projection, [q | k | v] heads of head_dim; see GemvFusion::rope_store.
  const int32_t* positions;  // [1]
  const float* inv_freq;     // [head_dim / 2]
  T* k_cache;                // [n_slots, n_kv_heads, head_dim]
  T* v_cache;
  const int32_t* slots;      // [1]
  int64_t n_slots;
  int n_heads, n_kv_heads, head_dim;
};

}  // namespace seam::cuda
