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

// The FP8 qkv product's tail from cuBLASLt's unscaled float32 sums (fp8_cublaslt.h run_sums):
// qkv [n, (n_heads + 2 n_kv_heads) d] gets q, k and v as fp8_scale_epilogue.cu writes them from
// `sums` [n, width] (row i: (xs[i] * w_scale[o]) * sums[i][o] (+ bias[o]) rounded to T), q and k
// rotated in place and K / V stored as launch_rope_store_kv does: one kernel and one pass over
// the sums instead of the epilogue's write of qkv and RoPE's read of it, bit for bit the same.
// Applies to 16-bit qkv, full rotary, head_dim % 16 == 0, 16-byte aligned rows, per-channel
// weight scales (16-byte aligned) and a bias of qkv's dtype or none; caches of qkv's dtype or E4M3.
bool rope_store_kv_from_fp8_sums_applies(const Tensor& qkv, int n_heads, const RopeTables& t, const Tensor& k_cache,
                                         const Tensor& v_cache, const Fp8Weight& w, const Tensor& bias);
void launch_rope_store_kv_from_fp8_sums(const Tensor& qkv, int n_heads, const float* sums, const float* xs,
                                        const Fp8Weight& w, const Tensor& bias, const Tensor& positions,
                                        const RopeTables& t, const Tensor& k_cache, const Tensor& v_cache,
                                        const Tensor& slots, cudaStream_t stream, KvScales sc = {});
// Launches of the kernel above in this process (the tests' check that a route took it).
int64_t rope_store_kv_from_fp8_sums_launches();
}
