// Attention's input stage for layers with q/k RMSNorm (Qwen3, Gemma 3), after the qkv
// projection: per-head RMSNorm of q and k, RoPE on both, and the token's rotated K and its V
// stored into the paged KV cache, in one kernel (the rms_norm, rms_norm and rope_store_kv
// kernels it replaces cost ~2-5 us each at batch 1, where decode is kernel-bound).
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"

namespace seam::cuda {

// q [n, n_heads, d], k and v [n, n_kv_heads, d] (packed heads, rows may be strided: views inside
// qkv), norms [d]; all in one float dtype. Caches [n_slots, n_kv_heads, d] contiguous in that
// dtype; positions, slots [n] i32 (a slot outside [0, n_slots) is skipped, as store_kv does).
// Equals rms_norm(q, q, q_norm); rms_norm(k, k, k_norm); rope_store_kv(...) up to the order of
// each head's float32 sum of squares: the normed values are rounded to the dtype before RoPE
// reads them, and RoPE computes exactly as rope.cu.
//
// Three kernels compute it, to the same bits: per_head (a warp a head, every angle computed in
// every head), shared_angles (a block's token's cos / sin computed once into shared memory,
// each head read once; head_dim <= 256, else per_head runs) and staged (a block's few tokens'
// heads copied to shared memory as 16-byte pieces, finished there, stored as 16-byte pieces;
// 16-byte aligned rows and head_dim <= 256, else shared_angles / per_head runs). The default is
// by_tokens; SEAM_QK_NORM_ROPE_KERNEL=0 (read once) selects per_head, =1 shared_angles, =2 staged, =3 vector.
// vector (a head on d / kVec lanes, 16-byte accesses, the rotary partner by a shuffle; 16-byte
// rows and full rotary, else the launcher falls back as for staged) sums each head's squares in
// another order, so it stores the other forms' values to T's rounding, not their bits.
// by_tokens (the default, SEAM_QK_NORM_ROPE_KERNEL=4) takes vector from kQkNormVectorTokens tokens on and
// shared_angles below: measured on the H200 (docs/performance.md, thirty-second pass) vector is faster at
// prefill's token counts (46.1 against 60.7 us at 4,096 tokens, 13.0 against 15.8 at 1,024), level at 512
// (8.8 / 9.0) and slower at decode's (4.8 against 3.0 us at 64, 4.6 against 2.3 at 1).
enum class QkNormRopeKernel { per_head, shared_angles, staged, vector, by_tokens };
constexpr int64_t kQkNormVectorTokens = 1024;
QkNormRopeKernel qk_norm_rope_kernel_default();
bool qk_norm_rope_shared_applies(int64_t head_dim);
// Whether the staged kernel runs for these operands (else the launcher falls back).
bool qk_norm_rope_staged_applies(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& k_cache,
                                 const Tensor& v_cache);

// Whether the vector kernel runs for these operands (else the launcher falls back).
bool qk_norm_rope_vector_applies(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& k_cache,
                                 const Tensor& v_cache, const RopeTables& t);

void launch_qk_norm_rope_store(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_norm,
                               const Tensor& k_norm, float eps, const Tensor& positions, const RopeTables& t,
                               const Tensor& k_cache, const Tensor& v_cache, const Tensor& slots, cudaStream_t stream,
                               QkNormRopeKernel kernel = qk_norm_rope_kernel_default());

}  // namespace seam::cuda
