// The boundary checks of the Backend ops, shared by every backend: devices, dtypes that
// must agree, shapes, strides and index tensors. A backend's op calls its function here
// first, then checks only what is its own (the CPU computes in float32 only; CUDA takes
// float32, float16 and bfloat16). Every failure is a seam::Error naming the op and the
// argument.
//
// Index tensors (ids, positions, slots, idx, the attention and sampling metadata) are
// i32 and may be longer than the rows an op produces: an op reads the first n entries,
// n being the rows of its output (graph buffers are sized for the largest batch).
#pragma once
#include "backend/backend.h"

namespace seam::op_checks {

void embedding(const Tensor& out, const Tensor& ids, const Tensor& table, Device dev);
void rms_norm(const Tensor& out, const Tensor& x, const Tensor& weight, Device dev);
void linear(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias, Device dev);
void linear_accumulate(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias, Device dev);
void rms_norm_linear(const Tensor& out, const Tensor& normed, const Tensor& x, const Tensor& norm_weight,
                     const Tensor& w, const Tensor& bias, Device dev);
void rms_norm_qkv_rope_store(const Tensor& qkv, const Tensor& normed, const Tensor& x, const Tensor& norm_weight,
                             const Tensor& w_qkv, const Tensor& b_qkv, const RopeStoreArgs& r, Device dev);
void rms_norm_gate_up_silu(const Tensor& act, const Tensor& gate_up, const Tensor& normed, const Tensor& x,
                           const Tensor& norm_weight, const Tensor& w_gate_up, Device dev);
void rms_norm_gate_up_act(const Tensor& act, const Tensor& gate_up, const Tensor& normed, const Tensor& x,
                          const Tensor& norm_weight, const Tensor& w_gate_up, Device dev);
void rope(const Tensor& q, const Tensor& k, const Tensor& positions, const RopeTables& t, Device dev);
void qk_norm_rope_store(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_norm, const Tensor& k_norm,
                        const Tensor& positions, const RopeTables& t, const Tensor& k_cache, const Tensor& v_cache,
                        const Tensor& slots, Device dev);
void silu_mul(const Tensor& out, const Tensor& gate_up, Device dev);
void gated_act(const Tensor& out, const Tensor& gate_up, Activation a, Device dev);
void scale(const Tensor& x, float s, Device dev);
void softcap(const Tensor& x, float cap, Device dev);
void rms_norm_add(const Tensor& residual, const Tensor& x, const Tensor& weight, Device dev);
// s: the FP8 cache scales (KvScales), finite and > 0 (checked whatever the cache dtype).
void store_kv(const Tensor& k_cache, const Tensor& v_cache, const Tensor& k, const Tensor& v, const Tensor& slots,
              Device dev, const KvScales& s = {});
void attention(const Tensor& out, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
               const AttentionBatch& b, const AttentionOptions& o, Device dev);
void gather_rows(const Tensor& out, const Tensor& x, const Tensor& idx, Device dev);
void scatter_i32(const Tensor& dst, const Tensor& pairs, Device dev);
// Tensor parallelism's column gather over n_ranks ranks: in [n, c], out [n, n_ranks * c], scratch of
// at least n_ranks * n * c elements, all contiguous and of one dtype (both backends' checks).
void all_gather_cols(const Tensor& out, const Tensor& in, const Tensor& scratch, int64_t n_ranks);
void apply_penalties(const Tensor& logits, const PenaltyBatch& p, Device dev);
void sample(const Tensor& out_ids, const Tensor& logits, const SamplingBatch& s, Device dev);
void apply_logit_bias(const Tensor& logits, const LogitBiasBatch& b, Device dev);
void logprobs(const Tensor& logits, const LogprobBatch& b, Device dev);
void linear_fp8(const Tensor& out, const Tensor& x, const Fp8Weight& w, const Tensor& bias, Device dev);
void quantize_fp8_per_channel(const Tensor& codes, const Tensor& scales, const Tensor& w, Device dev);
void apply_token_bitmask(const Tensor& logits, const Tensor& bitmask, const Tensor& rows, Device dev);

}  // namespace seam::op_checks
