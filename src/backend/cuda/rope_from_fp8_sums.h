// The FP8 qkv product's tail on cuBLASLt's float32 sums (CudaBackend::qkv_rope_store_fp8_lt): the
// scale epilogue, RoPE and the KV store in one kernel (rope.h's op, fed from the sums).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/backend.h"

namespace seam::cuda {

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
}  // namespace seam::cuda
