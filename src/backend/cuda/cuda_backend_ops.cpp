// CudaBackend ops: boundary checks (backend/op_checks.h), then the launcher of
// each op's kernel on the compute stream. Host scalars (sizes) are baked into a
// captured graph; everything per-step is read from device buffers by the kernels.
#include <algorithm>
#include <cstdint>

#include "backend/cuda/apply_penalties.h"
#include "backend/cuda/attention_decode.h"
#include "backend/cuda/attention_generic.h"
#include "backend/cuda/attention_prefill.h"
#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/diagnostic_switch.h"
#include "backend/cuda/gemv.h"
#include "backend/cuda/gated_act.h"
#include "backend/cuda/gather_rows.h"
#include "backend/cuda/rms_norm.h"
#include "backend/cuda/rms_norm_add.h"
#include "backend/cuda/qk_norm_rope_store.h"
#include "backend/cuda/rope.h"
#include "backend/cuda/logit_bias.h"
#include "backend/cuda/apply_token_bitmask.h"
#include "backend/cuda/logprobs.h"
#include "backend/cuda/sample.h"
#include "backend/cuda/scale.h"
#include "backend/cuda/scatter_i32.h"
#include "backend/cuda/skinny_gemm.h"
#include "backend/cuda/skinny_gemm_choice.h"
#include "backend/cuda/softcap.h"
#include "backend/cuda/store_kv.h"
#include "backend/op_checks.h"

namespace seam::cuda {

namespace {

// The GEMV's RoPE + KV-store fusion arguments (GemvFusion::rope) from the op's RopeStoreArgs.
GemvFusion::RopeStore gemv_rope_store(const RopeStoreArgs& r) {
  GemvFusion::RopeStore g;
  g.positions = r.positions;
  g.inv_freq = r.inv_freq;
  g.inv_freq_long = r.inv_freq_long;
  g.long_from = r.long_from;
  g.inv_freq_lo = r.inv_freq_lo;
  g.inv_freq_long_lo = r.inv_freq_long_lo;
  g.k_cache = r.k_cache;
  g.v_cache = r.v_cache;
  g.slots = r.slots;
  g.n_heads = r.n_heads;
  return g;
}

}  // namespace

namespace {

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// SEAM_ATTENTION_FORK (attention()): 1, the default, runs a MIXED batch's decode-row attention on
// a side stream; 0 keeps it on the main stream.
bool attention_fork_enabled() {
  static const bool on = env_choice("SEAM_ATTENTION_FORK", 1, {0, 1}) == 1;
  return on;
}

}  // namespace

void CudaBackend::embedding(Tensor out, Tensor ids, Tensor table) {
  op_checks::embedding(out, ids, table, Device::cuda);
  launch_gather_rows(out, table, ids, stream_);
}

void CudaBackend::rms_norm(Tensor out, Tensor x, Tensor weight, float eps) {
  op_checks::rms_norm(out, x, weight, Device::cuda);
  launch_rms_norm(out, x, weight, eps, stream_);
}

namespace {

// SEAM_SKINNY_GEMM: 0 never, 1 by choose_skinny_gemm's rule (default), 2 wherever it applies.
int skinny_gemm_mode() {
  static const int mode = env_choice("SEAM_SKINNY_GEMM", 1, {0, 1, 2});
  return mode;
}

bool takes_skinny_gemm(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias) {
  return skinny_gemm_applies(out, x, w, bias) && choose_skinny_gemm(skinny_gemm_mode(), x.size(0), w.size(0), w.size(1));
}

}  // namespace

void CudaBackend::linear(Tensor out, Tensor x, Tensor w, Tensor bias) {
  op_checks::linear(out, x, w, bias, Device::cuda);
  // One row streams the weights through the GEMV kernel, a few rows through the skinny
  // tensor-core GEMM; everything else (prefill, large decode batches, float32) goes to cuBLASLt.
  if (gemv_applies(out, x, w, bias))
    launch_gemv(out, x, w, bias, GemvFusion{}, stream_);
  else if (takes_skinny_gemm(out, x, w, bias))
    launch_skinny_gemm(out, x, w, bias, /*accumulate=*/false, stream_);
  else
    gemm_->run(out, x, w, bias, stream_);
}

void CudaBackend::linear_accumulate(Tensor out, Tensor x, Tensor w, Tensor bias) {
  op_checks::linear_accumulate(out, x, w, bias, Device::cuda);
  GemvFusion f;
  f.accumulate = true;
  if (gemv_fusion_applies(out, x, w, bias, f))
    launch_gemv(out, x, w, bias, f, stream_);
  else if (takes_skinny_gemm(out, x, w, bias))
    launch_skinny_gemm(out, x, w, bias, /*accumulate=*/true, stream_);
  else
    gemm_->run(out, x, w, bias, stream_, /*accumulate=*/true);
}

void CudaBackend::rms_norm_linear(Tensor out, Tensor normed, Tensor x, Tensor norm_weight, float eps, Tensor w,
                                  Tensor bias) {
  op_checks::rms_norm_linear(out, normed, x, norm_weight, w, bias, Device::cuda);
  // One row: the GEMV normalises x as it streams w (normed stays unwritten): one kernel, not two.
  GemvFusion f;
  f.norm_weight = norm_weight;
  f.eps = eps;
  if (gemv_fusion_applies(out, x, w, bias, f)) return launch_gemv(out, x, w, bias, f, stream_);
  Backend::rms_norm_linear(out, normed, x, norm_weight, eps, w, bias);
}

void CudaBackend::rms_norm_qkv_rope_store(Tensor qkv, Tensor normed, Tensor x, Tensor norm_weight, float eps,
                                          Tensor w_qkv, Tensor b_qkv, const RopeStoreArgs& r) {
  op_checks::rms_norm_qkv_rope_store(qkv, normed, x, norm_weight, w_qkv, b_qkv, r, Device::cuda);
  // One row: norm, projection, RoPE and the KV store in one GEMV (the rope_store_kv kernel drops out).
  GemvFusion f;
  f.norm_weight = norm_weight;
  f.eps = eps;
  f.rope_store = true;
  f.rope = gemv_rope_store(r);
  // An FP8 cache is not the fused GEMV's (it stores in x's dtype: gemv_fusion_applies says no),
  // so the fallback below runs: rms_norm_linear, then rope_store_kv encoding with r.kv_scales.
  if (gemv_fusion_applies(qkv, x, w_qkv, b_qkv, f)) return launch_gemv(qkv, x, w_qkv, b_qkv, f, stream_);
  Backend::rms_norm_qkv_rope_store(qkv, normed, x, norm_weight, eps, w_qkv, b_qkv, r);
}

void CudaBackend::rms_norm_qkv_qk_norm_rope_store(Tensor qkv, Tensor normed, Tensor x, Tensor norm_weight, float eps,
                                                  Tensor w_qkv, Tensor b_qkv, Tensor q_norm, Tensor k_norm,
                                                  const RopeStoreArgs& r) {
  op_checks::rms_norm_qkv_rope_store(qkv, normed, x, norm_weight, w_qkv, b_qkv, r, Device::cuda);
  const RopeStoreArgs::Qkv h = r.split_qkv(qkv);
  op_checks::qk_norm_rope_store(h.q, h.k, h.v, q_norm, k_norm, r.positions, r.tables(), r.k_cache, r.v_cache, r.slots,
                                Device::cuda);
  // One row: norm and projection in one GEMV whose last block of each head finishes it (q/k
  // norm, RoPE, the KV store: GemvFusion::qk_norm); the qk_norm_rope_store launch drops out and
  // qkv and the caches are those of the two ops, bit for bit. FP8 caches take the two ops.
  GemvFusion f;
  f.norm_weight = norm_weight;
  f.eps = eps;
  f.rope = gemv_rope_store(r);
  f.qk_norm.q_norm = q_norm;
  f.qk_norm.k_norm = k_norm;
  f.qk_norm.counters = qk_counters_ + next_qk_counters_ * kQkCounters;
  f.qk_norm.n_counters = kQkCounters;
  if (fused_qk_norm_ && gemv_fusion_applies(qkv, x, w_qkv, b_qkv, f)) {
    next_qk_counters_ ^= 1;
    return launch_gemv(qkv, x, w_qkv, b_qkv, f, stream_);
  }
  Backend::rms_norm_qkv_qk_norm_rope_store(qkv, normed, x, norm_weight, eps, w_qkv, b_qkv, q_norm, k_norm, r);
}

void CudaBackend::rms_norm_gate_up_silu(Tensor act, Tensor gate_up, Tensor normed, Tensor x, Tensor norm_weight,
                                        float eps, Tensor w_gate_up) {
  op_checks::rms_norm_gate_up_silu(act, gate_up, normed, x, norm_weight, w_gate_up, Device::cuda);
  // One row: norm, both projections and SiLU * up in one GEMV (gate_up and normed unwritten).
  GemvFusion f;
  f.norm_weight = norm_weight;
  f.eps = eps;
  f.silu_mul = true;
  if (gemv_fusion_applies(act, x, w_gate_up, Tensor(), f)) return launch_gemv(act, x, w_gate_up, Tensor(), f, stream_);
  Backend::rms_norm_gate_up_silu(act, gate_up, normed, x, norm_weight, eps, w_gate_up);
}

void CudaBackend::rms_norm_gate_up_act(Tensor act, Tensor gate_up, Tensor normed, Tensor x, Tensor norm_weight,
                                       float eps, Tensor w_gate_up, Activation a) {
  op_checks::rms_norm_gate_up_act(act, gate_up, normed, x, norm_weight, w_gate_up, Device::cuda);
  // One row: norm, both projections and act(gate) * up in one GEMV, as rms_norm_gate_up_silu.
  GemvFusion f;
  f.norm_weight = norm_weight;
  f.eps = eps;
  f.silu_mul = true;
  f.glu_act = a;
  if (gemv_fusion_applies(act, x, w_gate_up, Tensor(), f)) return launch_gemv(act, x, w_gate_up, Tensor(), f, stream_);
  rms_norm_linear(gate_up, normed, x, norm_weight, eps, w_gate_up, Tensor());
  launch_gated_act(act, gate_up, a, stream_);
}

void CudaBackend::rope(Tensor q, Tensor k, Tensor positions, const RopeTables& t) {
  op_checks::rope(q, k, positions, t, Device::cuda);
  launch_rope(q, k, positions, t, stream_);
}

void CudaBackend::silu_mul(Tensor out, Tensor gate_up) {
  op_checks::silu_mul(out, gate_up, Device::cuda);
  launch_gated_act(out, gate_up, Activation::silu, stream_);
}

void CudaBackend::gated_act(Tensor out, Tensor gate_up, Activation a) {
  op_checks::gated_act(out, gate_up, a, Device::cuda);
  launch_gated_act(out, gate_up, a, stream_);
}

void CudaBackend::scale(Tensor x, float s) {
  op_checks::scale(x, s, Device::cuda);
  launch_scale(x, s, stream_);
}

void CudaBackend::softcap(Tensor x, float cap) {
  op_checks::softcap(x, cap, Device::cuda);
  launch_softcap(x, cap, stream_);
}

void CudaBackend::rms_norm_add(Tensor residual, Tensor x, Tensor weight, float eps) {
  op_checks::rms_norm_add(residual, x, weight, Device::cuda);
  launch_rms_norm_add(residual, x, weight, eps, stream_);
}

void CudaBackend::linear_rms_norm_add(Tensor residual, Tensor out, Tensor x, Tensor w, Tensor bias,
                                      Tensor norm_weight, float eps) {
  op_checks::linear(out, x, w, bias, Device::cuda);
  op_checks::rms_norm_add(residual, out, norm_weight, Device::cuda);
  // One row: the GEMV's last block applies the norm (the rms_norm_add launch drops out).
  GemvFusion f;
  f.post_norm.residual = residual;
  f.post_norm.weight = norm_weight;
  f.post_norm.eps = eps;
  f.post_norm.counter = post_norm_counters_ + next_post_norm_counter_;
  if (fused_post_norm_ && gemv_fusion_applies(out, x, w, bias, f)) {
    next_post_norm_counter_ = (next_post_norm_counter_ + 1) % kPostNormCounters;
    return launch_gemv(out, x, w, bias, f, stream_);
  }
  Backend::linear_rms_norm_add(residual, out, x, w, bias, norm_weight, eps);
}

void CudaBackend::store_kv(Tensor k_cache, Tensor v_cache, Tensor k, Tensor v, Tensor slots, KvScales s) {
  op_checks::store_kv(k_cache, v_cache, k, v, slots, Device::cuda, s);
  launch_store_kv(k_cache, v_cache, k, v, slots, stream_, s);
}

void CudaBackend::rope_store_kv(Tensor q, Tensor k, Tensor v, Tensor positions, const RopeTables& t,
                                Tensor k_cache, Tensor v_cache, Tensor slots, KvScales s) {
  op_checks::rope(q, k, positions, t, Device::cuda);
  op_checks::store_kv(k_cache, v_cache, k, v, slots, Device::cuda, s);
  launch_rope_store_kv(q, k, v, positions, t, k_cache, v_cache, slots, stream_, s);
}

void CudaBackend::qk_norm_rope_store(Tensor q, Tensor k, Tensor v, Tensor q_norm, Tensor k_norm, float eps,
                                     Tensor positions, const RopeTables& t, Tensor k_cache, Tensor v_cache,
                                     Tensor slots, KvScales s) {
  op_checks::qk_norm_rope_store(q, k, v, q_norm, k_norm, positions, t, k_cache, v_cache, slots, Device::cuda);
  // The fused kernel writes caches of the activation dtype; FP8 caches (which quantize on the
  // store) take the composed path.
  if (k_cache.dtype != q.dtype) return Backend::qk_norm_rope_store(q, k, v, q_norm, k_norm, eps, positions, t,
                                                                    k_cache, v_cache, slots, s);
  launch_qk_norm_rope_store(q, k, v, q_norm, k_norm, eps, positions, t, k_cache, v_cache, slots, stream_);
}

void CudaBackend::attention(Tensor out, Tensor q, Tensor k_cache, Tensor v_cache, const AttentionBatch& b,
                            const AttentionOptions& o) {
  op_checks::attention(out, q, k_cache, v_cache, b, o, Device::cuda);
  if (b.n_tokens == 0 || b.n_seqs == 0) return;

  // Every kernel below honours o's window (starting its key walk at the window) and soft-cap.
  const AttentionParams p = make_attention_params(out, q, k_cache, v_cache, b, o);

  // The tensor-core kernels read q/out as 4-byte pairs and K/V rows as 16-byte chunks.
  const bool pairs_aligned = reinterpret_cast<uintptr_t>(q.data) % 4 == 0 && q.stride[0] % 2 == 0 &&
                             reinterpret_cast<uintptr_t>(out.data) % 4 == 0 && out.stride[0] % 2 == 0 &&
                             aligned16(k_cache.data) && aligned16(v_cache.data);
  // The prefill kernels also copy whole q rows into shared memory with 16-byte cp.async.
  const bool q_rows_aligned16 =
      aligned16(q.data) && (q.stride[0] * int64_t(dtype_size(q.dtype))) % 16 == 0;
  // A MIXED batch's two attentions touch disjoint rows of out and of the KV cache, and the
  // prefill rows' is tensor-core-bound while the decode rows' is memory-bound: the decode rows'
  // runs on a side stream, forked after the kernels that wrote q and the new keys and joined
  // before the next op, so the two overlap. On one stream PDL made the decode kernel wait for
  // the prefill kernel to finish (measured: 8B, 512-token chunk + 64 decode rows, ~52 us a
  // layer more than the chunk alone, docs/performance.md). SEAM_ATTENTION_FORK=0 keeps one
  // stream (a diagnostic switch).
  const bool fork = b.n_prefill_tokens > 0 && b.n_tokens > b.n_prefill_tokens && attention_fork_enabled();
  if (fork) {
    SEAM_CUDA_CHECK(cudaEventRecord(fork_event_, stream_));
    SEAM_CUDA_CHECK(cudaStreamWaitEvent(side_stream_, fork_event_, 0));
  }
  if (pairs_aligned && q_rows_aligned16 && flash_prefill_supported(q.dtype, p.head_dim))
    launch_flash_prefill(p, q.dtype, stream_);
  else
    launch_attention_generic(p, q.dtype, 0, b.n_prefill_tokens, stream_);
  cudaStream_t decode_stream = fork ? side_stream_ : stream_;
  if (pairs_aligned && flash_decode_supported(q.dtype, p.head_dim, p.group))
    launch_flash_decode(p, q.dtype, attention_scratch_, kAttentionScratchBytes, attention_counters_,
                        kAttentionCounters, n_sms_, decode_stream);
  else
    launch_attention_generic(p, q.dtype, b.n_prefill_tokens, b.n_tokens - b.n_prefill_tokens, decode_stream);
  if (fork) {
    SEAM_CUDA_CHECK(cudaEventRecord(join_event_, side_stream_));
    SEAM_CUDA_CHECK(cudaStreamWaitEvent(stream_, join_event_, 0));
  }
}

void CudaBackend::gather_rows(Tensor out, Tensor x, Tensor idx) {
  op_checks::gather_rows(out, x, idx, Device::cuda);
  launch_gather_rows(out, x, idx, stream_);
}

void CudaBackend::scatter_i32(Tensor dst, Tensor pairs) {
  op_checks::scatter_i32(dst, pairs, Device::cuda);
  launch_scatter_i32(dst, pairs, stream_);
}

void CudaBackend::apply_penalties(Tensor logits, const PenaltyBatch& p) {
  op_checks::apply_penalties(logits, p, Device::cuda);
  if (p.n == 0) return;
  launch_apply_penalties(logits, p, stream_);
}

void CudaBackend::sample(Tensor out_ids, Tensor logits, const SamplingBatch& s) {
  op_checks::sample(out_ids, logits, s, Device::cuda);
  if (s.n == 0) return;
  launch_sample(out_ids, logits, s, stream_);
}

void CudaBackend::apply_logit_bias(Tensor logits, const LogitBiasBatch& b) {
  op_checks::apply_logit_bias(logits, b, Device::cuda);
  if (b.n == 0) return;
  launch_apply_logit_bias(logits, b, stream_);
}

void CudaBackend::apply_token_bitmask(Tensor logits, Tensor bitmask, Tensor rows) {
  op_checks::apply_token_bitmask(logits, bitmask, rows, Device::cuda);
  launch_apply_token_bitmask(logits, bitmask, rows, stream_);
}

void CudaBackend::logprobs(Tensor logits, const LogprobBatch& b) {
  op_checks::logprobs(logits, b, Device::cuda);
  if (b.n == 0) return;
  launch_logprobs(logits, b, stream_);
}

}  // namespace seam::cuda
