// The pieces rope.cu's kernel and rope_from_fp8_sums.cu's share: P-element vectors, where a
// token's K and V go in the KV cache (as they are, or as E4M3 codes), and the rotary tables as the
// kernels read them. Included by .cu files only.
#pragma once
#include <cstdint>

#include "backend/backend.h"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/kv_fp8.cuh"
#include "backend/rope_angle.h"

namespace seam::cuda::rope_io {

template <typename T, int P>
struct alignas(P * sizeof(T)) Pack {
  T v[P];
};

// Where rope_kernel<STORE = true> (and rope_from_sums_kernel) also writes the token's rotated K
// and its V: a cache of element KV = T, or of E4M3 codes (KV = Fp8: e4m3(x / scale), kv_fp8.cuh).
template <typename T, typename KV = T>
struct KvDest {
  const T* v = nullptr;  // [n, n_kv_heads, d], row stride v_stride
  int64_t v_stride = 0;
  KV* k_cache = nullptr;  // [n_slots, n_kv_heads, d]
  KV* v_cache = nullptr;
  const int32_t* slots = nullptr;  // [n]
  int64_t n_slots = 0;
  KvScales scales;  // FP8 only
};

// Stores P elements `a` at `dst` of a KV cache: as they are, or encoded (e4m3(x / scale)).
template <typename T, typename KV, int P>
__device__ __forceinline__ void put(KV* dst, const Pack<T, P>& a, float scale) {
  if constexpr (kIsFp8<KV>) {
#pragma unroll
    for (int i = 0; i < P; ++i) dst[i] = e4m3_encode(to_float(a.v[i]) / scale);
  } else {
    *reinterpret_cast<Pack<T, P>*>(dst) = a;
  }
}

// The rotary tables as the kernel reads them (RopeTables): the angles (rope_angle.h) and
// their count.
struct Tables {
  RopeAngles angles;
  int half = 0;  // rotary_dim / 2 (<= d / 2): dims [2 half, d) pass through
};

inline Tables tables_of(const RopeTables& t) {
  Tables tb;
  tb.angles = t.angles();
  tb.half = int(t.inv_freq.size(0));
  return tb;
}

}  // namespace seam::cuda::rope_io
