// Weight-streaming GEMV for batch-1 decode, used by `linear` instead of cuBLASLt when it
// applies (gemv_applies): there a projection is one pass over the weights, and cuBLASLt
// reaches only 64-78 % of bandwidth on the 4096-wide qkv/o weights and pays several
// microseconds of fixed cost on the small models' 896/2048-wide ones. From 2 rows on,
// x traffic through L1 (rows x weight bytes) already made it slower than cuBLASLt on
// the 8B shapes (measured: docs/performance.md), so those stay there.
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"

namespace seam::cuda {

// The largest batch (rows of x) the GEMV serves.
constexpr int64_t kGemvMaxRows = 1;

// True when launch_gemv can compute this linear: x and w f16 or bf16 (one dtype), out that
// dtype or f32, bias undefined or w's dtype, 1 <= rows <= kGemvMaxRows, in % 8 == 0, and
// every row 16-byte aligned.
bool gemv_applies(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias);

// Work fused around the product (the default is none).
struct GemvFusion {
  // Defined: the product is taken with rms_norm(x) * norm_weight (HF RMSNorm, eps) instead of x.
  Tensor norm_weight;  // [n_in], x's dtype, 16-byte aligned
  float eps = 0.f;
  bool accumulate = false;  // out += result (out has x's dtype) instead of out = result
  // w is [gate | up] ([2 * inter, n_in]) and out [m, inter] = act(x @ gate^T) * (x @ up^T),
  // act = glu_act (silu, or Gemma's gelu_tanh). Only with norm_weight (the MLP's input norm),
  // no bias, no accumulate.
  bool silu_mul = false;
  Activation glu_act = Activation::silu;
  // w is the attention's fused [q | k | v] projection and out its [m, q + 2 kv] output (m = 1):
  // q and k are rotated at positions[0] (HF rotate_half within the rotary dims, as rope_kernel:
  // RopeTables' partial rotary and LongRoPE tables) and k, v also stored to the caches at
  // slots[0] (skipped outside [0, n_slots), as store_kv). Only with norm_weight.
  struct RopeStore {
    Tensor positions, inv_freq;  // [>= 1] i32, [rotary_dim / 2] f32
    Tensor inv_freq_long;        // [rotary_dim / 2] f32 or undefined
    Tensor inv_freq_lo, inv_freq_long_lo;  // their lo halves or undefined (RopeTables, rope_angle.h)
    int long_from = 0;
    Tensor k_cache, v_cache;     // [n_slots, n_kv_heads, head_dim], x's dtype
    Tensor slots;                // [>= 1] i32
    int n_heads = 0;
  } rope;
  bool rope_store = false;
  // counter set: Gemma's post-norm after the product, residual [1, n_out] += rms_norm(out) *
  // weight (eps), as launch_rms_norm_add computes it, bit for bit; out is written as without it.
  // The last of the grid's blocks to finish applies it (gemv.cu). Only for a plain projection
  // of one row into x's dtype (no input norm, GLU, RoPE, accumulate); n_out a multiple of 16
  // bytes' elements and out, residual, weight 16-byte aligned. The counter is a device word
  // that is zero before the launch and that no other kernel touches while it runs; the launch
  // leaves it zero (graph replays reuse it).
  struct PostNorm {
    Tensor residual, weight;  // [1, n_out], [n_out]; x's dtype
    float eps = 0.f;
    unsigned* counter = nullptr;
  } post_norm;
  // counter set: the router of a mixture-of-experts layer, out [1, n_experts] the logits (x's
  // dtype), then the routing of that row as launch_moe_route computes it on its warp kernel
  // (route_row_warp, moe_route_warp.cuh: the same ids and weights, bit for bit) into topk_ids
  // [1, k] i32 and topk_weights [1, k] f32, by the last of the grid's blocks to finish: the
  // moe_route launch drops out. The product is linear()'s (the same slices and epilogue: the
  // logits are bit-identical). Only for a plain projection of one row into x's dtype (no bias,
  // GLU, RoPE, accumulate, post-norm), out contiguous, and n_experts, k that
  // moe_route_warp_applies takes (an input norm only with normed_out, below). The counter as
  // post_norm's: zero before, left zero.
  struct Route {
    Tensor topk_ids, topk_weights;  // [1, k] i32, [1, k] f32
    bool renormalize = false;
    unsigned* counter = nullptr;
  } route;
  // Defined (only with route and norm_weight): the input norm is rms_norm's, not the inline one.
  // Every block computes normed = rms_norm(x) * norm_weight as launch_rms_norm does at one row
  // (its block-per-row kernel's sums, scale and rounding: bit for bit), stages it in shared
  // memory and takes the product with it (linear(normed)'s product, bit for bit); block 0 also
  // writes it here: normed_out [1, n_in] in x's dtype, 16-byte aligned, for the experts to read.
  Tensor normed_out;
  // counters set: attention's q/k-norm input stage (Qwen3, Gemma 3) after the norm-fused qkv
  // product of one row (norm_weight required; rope's positions, tables, caches, slots and n_heads
  // as for rope_store, which stays off): the last block to finish a head's d rows (a count per
  // head) normalises that q or k head with q_norm / k_norm, rotates it and stores it in place and,
  // for k, to the KV slot, and copies a v head to the cache, as launch_qk_norm_rope_store does
  // (qk_norm_rope_head.cuh: bit for bit): that launch drops out. The product is
  // rms_norm_linear's (the same slices and epilogue). Caches in x's dtype; head_dim even, >= 8;
  // counters: n_counters >= n_heads + 2 n_kv_heads words, zero before, left zero.
  struct QkNorm {
    Tensor q_norm, k_norm;  // [head_dim], x's dtype
    unsigned* counters = nullptr;
    int64_t n_counters = 0;
  } qk_norm;
};

// The norm stages x * norm_weight in shared memory: rows of up to this many bytes.
constexpr int64_t kGemvMaxStagedBytes = 32 << 10;

// True when launch_gemv can compute this linear with the fusions of f: gemv_applies, and the
// fusions' own requirements (above).
bool gemv_fusion_applies(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias,
                         const GemvFusion& f);

// out [m, n_out] = x [m, n_in] @ w [n_out, n_in]^T (+ bias [n_out]), fp32 accumulation, with
// the fusions of f. Requires gemv_fusion_applies(out, x, w, bias, f).
void launch_gemv(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias, const GemvFusion& f,
                 cudaStream_t stream);

// Launches of the post-norm GEMV (GemvFusion::post_norm) in this process so far, host side (a
// capture counts once, its replays not): tests check that a decode step takes the fused path.
int64_t gemv_post_norm_launches();
// Launches of the router GEMV with its route tail (GemvFusion::route), counted as above.
int64_t gemv_route_launches();
// Launches of the qkv GEMV with its q/k-norm tail (GemvFusion::qk_norm), counted as above.
int64_t gemv_qk_norm_launches();

}  // namespace seam::cuda
