// Rotary embedding (HF rotate_half within the first rotary_dim dims: pairs (i, i + rotary_dim/2),
// the rest pass through; LongRoPE's second table by position: RopeTables) in place on q and k,
// optionally storing the rotated K and V of each token into the paged KV cache in the same kernel.
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"

namespace seam::cuda {
// q [n, n_heads, d], k [n, n_kv_heads, d] (packed heads, rows may be strided: views inside qkv),
// positions [n] i32 (device), t's tables [rotary_dim/2] f32 (device).
void launch_rope(const Tensor& q, const Tensor& k, const Tensor& positions, const RopeTables& t,
                 cudaStream_t stream);
// launch_rope, then k_cache[slots[i]] = k[i] (rotated), v_cache[slots[i]] = v[i], as store_kv:
// v [n, n_kv_heads, d] (rows may be strided), caches [n_slots, n_kv_heads, d] contiguous,
// slots [n] i32; a slot outside [0, n_slots) is skipped. FP8 E4M3 caches take e4m3(x / sc.k),
// e4m3(x / sc.v) of the rotated K and of V (as launch_store_kv).
void launch_rope_store_kv(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& positions,
                          const RopeTables& t, const Tensor& k_cache, const Tensor& v_cache, const Tensor& slots,
                          cudaStream_t stream, KvScales sc = {});
}
