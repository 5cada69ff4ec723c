#include "backend/op_checks.h"

#include <cmath>
#include <cstdint>

#include "backend/op_check_helpers.h"

namespace seam::op_checks {

using namespace detail;

namespace {

// A KV cache: in the activation dtype, or FP8 E4M3 codes (--kv-cache-dtype fp8_e4m3).
void cache(const Tensor& t, DType act, Device dev, const char* what) {
  on(t, dev, what);
  SEAM_CHECK(t.dtype == act || t.dtype == DType::fp8_e4m3, what, ": dtype ", dtype_name(t.dtype), ", expected ",
             dtype_name(act), " or float8_e4m3fn");
}

// The logits of a sampling-side op: float32 [>= n rows, vocab] with packed rows on `dev`
// (`what` names them: "sample logits"). False when n is 0: nothing else to check.
bool logit_rows(const Tensor& logits, int64_t n, Device dev, const char* what) {
  same(logits, DType::f32, dev, what);
  rows(logits, what);
  SEAM_CHECK(logits.size(0) >= n, what, ": ", logits.size(0), " rows for ", n);
  return n > 0;
}

void kv_scales(const KvScales& s, const char* what) {
  SEAM_CHECK(std::isfinite(s.k) && s.k > 0.f && std::isfinite(s.v) && s.v > 0.f, what, ": KV cache scales (k ", s.k,
             ", v ", s.v, ") must be finite and > 0");
}

}  // namespace

void embedding(const Tensor& out, const Tensor& ids, const Tensor& table, Device dev) {
  floating(table, dev, "embedding table");
  same(out, table.dtype, dev, "embedding out");
  rows(table, "embedding table");
  rows(out, "embedding out");
  check_shape(out, {-1, table.size(1)}, "embedding out");
  index(ids, out.size(0), dev, "embedding ids");
}

void rms_norm(const Tensor& out, const Tensor& x, const Tensor& weight, Device dev) {
  floating(x, dev, "rms_norm x");
  same(out, x.dtype, dev, "rms_norm out");
  same(weight, x.dtype, dev, "rms_norm weight");
  SEAM_CHECK((x.ndim == 2 || x.ndim == 3) && x.rows_contiguous() && out.rows_contiguous(),
             "rms_norm x: expected [n, d] or [n, heads, d] with packed rows");
  SEAM_CHECK(out.ndim == x.ndim && out.size(0) == x.size(0) && out.size(-1) == x.size(-1) &&
                 (x.ndim == 2 || out.size(1) == x.size(1)),
             "rms_norm: out ", out.shape_str(), " does not match x ", x.shape_str());
  check_shape(weight, {x.size(-1)}, "rms_norm weight");
  SEAM_CHECK(weight.contiguous(), "rms_norm weight: must be contiguous");
}

void linear(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias, Device dev) {
  floating(x, dev, "linear x");
  same(w, x.dtype, dev, "linear w");
  on(out, dev, "linear out");
  SEAM_CHECK(out.dtype == x.dtype || out.dtype == DType::f32, "linear out: dtype ", dtype_name(out.dtype),
             ", expected ", dtype_name(x.dtype), " or float32");
  rows(x, "linear x");
  rows(out, "linear out");
  SEAM_CHECK(w.ndim == 2 && w.contiguous(), "linear w: expected contiguous [out, in], got ", w.shape_str());
  check_shape(out, {x.size(0), w.size(0)}, "linear out");
  SEAM_CHECK(x.size(1) == w.size(1), "linear: x has ", x.size(1), " columns, w has ", w.size(1));
  if (bias.defined()) {
    on(bias, dev, "linear bias");
    SEAM_CHECK(bias.dtype == w.dtype || bias.dtype == out.dtype, "linear bias: dtype ", dtype_name(bias.dtype));
    SEAM_CHECK(bias.contiguous(), "linear bias: must be contiguous");
    check_shape(bias, {w.size(0)}, "linear bias");
  }
}

void linear_accumulate(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias, Device dev) {
  linear(out, x, w, bias, dev);
  SEAM_CHECK(out.dtype == x.dtype, "linear_accumulate out: dtype ", dtype_name(out.dtype), ", expected ",
             dtype_name(x.dtype));
  SEAM_CHECK(!overlap(out, x), "linear_accumulate: out overlaps x");
}

void rms_norm_linear(const Tensor& out, const Tensor& normed, const Tensor& x, const Tensor& norm_weight,
                     const Tensor& w, const Tensor& bias, Device dev) {
  rms_norm(normed, x, norm_weight, dev);
  SEAM_CHECK(x.ndim == 2, "rms_norm_linear x: expected [n, d], got ", x.shape_str());
  linear(out, normed, w, bias, dev);
  SEAM_CHECK(!overlap(out, x), "rms_norm_linear: out overlaps x");
}

void rms_norm_qkv_rope_store(const Tensor& qkv, const Tensor& normed, const Tensor& x, const Tensor& norm_weight,
                             const Tensor& w_qkv, const Tensor& b_qkv, const RopeStoreArgs& r, Device dev) {
  rms_norm_linear(qkv, normed, x, norm_weight, w_qkv, b_qkv, dev);
  SEAM_CHECK(r.k_cache.defined() && r.k_cache.ndim == 3 && r.n_heads > 0,
             "rms_norm_qkv_rope_store: expected k_cache [n_slots, n_kv_heads, d] and n_heads > 0");
  const int64_t kv = r.k_cache.size(1), d = r.k_cache.size(2), q_size = r.n_heads * d;
  SEAM_CHECK(qkv.size(1) == q_size + 2 * kv * d, "rms_norm_qkv_rope_store: qkv ", qkv.shape_str(), " is not [n, (",
             r.n_heads, " + 2 * ", kv, ") * ", d, "]");
  const RopeStoreArgs::Qkv h = r.split_qkv(qkv);
  rope(h.q, h.k, r.positions, r.tables(), dev);
  store_kv(r.k_cache, r.v_cache, h.k, h.v, r.slots, dev, r.kv_scales);
}

void rms_norm_gate_up_silu(const Tensor& act, const Tensor& gate_up, const Tensor& normed, const Tensor& x,
                           const Tensor& norm_weight, const Tensor& w_gate_up, Device dev) {
  rms_norm_linear(gate_up, normed, x, norm_weight, w_gate_up, Tensor(), dev);
  silu_mul(act, gate_up, dev);
  SEAM_CHECK(gate_up.dtype == x.dtype, "rms_norm_gate_up_silu gate_up: dtype ", dtype_name(gate_up.dtype),
             ", expected ", dtype_name(x.dtype));
  SEAM_CHECK(!overlap(act, x), "rms_norm_gate_up_silu: act overlaps x");
}

void rms_norm_gate_up_act(const Tensor& act, const Tensor& gate_up, const Tensor& normed, const Tensor& x,
                          const Tensor& norm_weight, const Tensor& w_gate_up, Device dev) {
  rms_norm_gate_up_silu(act, gate_up, normed, x, norm_weight, w_gate_up, dev);
}

void rope(const Tensor& q, const Tensor& k, const Tensor& positions, const RopeTables& t, Device dev) {
  floating(q, dev, "rope q");
  same(k, q.dtype, dev, "rope k");
  SEAM_CHECK(q.ndim == 3 && k.ndim == 3 && q.rows_contiguous() && k.rows_contiguous(),
             "rope: expected q [n, heads, d], k [n, kv_heads, d]");
  const int64_t d = q.size(2);
  SEAM_CHECK(k.size(2) == d && k.size(0) == q.size(0) && d % 2 == 0, "rope: q/k shapes disagree");
  index(positions, q.size(0), dev, "rope positions");
  same(t.inv_freq, DType::f32, dev, "rope inv_freq");
  SEAM_CHECK(t.inv_freq.ndim == 1 && t.inv_freq.contiguous() && t.inv_freq.size(0) > 0 &&
                 2 * t.inv_freq.size(0) <= d,
             "rope inv_freq: expected contiguous [rotary_dim / 2] f32 with 0 < rotary_dim <= head_dim ", d, ", got ",
             t.inv_freq.shape_str());
  if (t.inv_freq_long.defined()) {
    same(t.inv_freq_long, DType::f32, dev, "rope inv_freq_long");
    SEAM_CHECK(t.inv_freq_long.contiguous(), "rope inv_freq_long: must be contiguous");
    check_shape(t.inv_freq_long, {t.inv_freq.size(0)}, "rope inv_freq_long");
    SEAM_CHECK(t.long_from >= 0, "rope long_from: ", t.long_from, " is negative");
  }
  // The lo halves of the tables (rope_angle.h): each the shape of inv_freq, the long one only
  // with the long table.
  const auto lo = [&](const Tensor& x, const char* what) {
    if (!x.defined()) return;
    same(x, DType::f32, dev, what);
    SEAM_CHECK(x.contiguous(), what, ": must be contiguous");
    check_shape(x, {t.inv_freq.size(0)}, what);
  };
  lo(t.inv_freq_lo, "rope inv_freq_lo");
  lo(t.inv_freq_long_lo, "rope inv_freq_long_lo");
  SEAM_CHECK(!t.inv_freq_long_lo.defined() || t.inv_freq_long.defined(),
             "rope inv_freq_long_lo: set without inv_freq_long");
}

void qk_norm_rope_store(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_norm, const Tensor& k_norm,
                        const Tensor& positions, const RopeTables& t, const Tensor& k_cache, const Tensor& v_cache,
                        const Tensor& slots, Device dev) {
  rms_norm(q, q, q_norm, dev);
  rms_norm(k, k, k_norm, dev);
  rope(q, k, positions, t, dev);
  store_kv(k_cache, v_cache, k, v, slots, dev);
}

void silu_mul(const Tensor& out, const Tensor& gate_up, Device dev) {
  floating(out, dev, "silu_mul out");
  same(gate_up, out.dtype, dev, "silu_mul gate_up");
  rows(out, "silu_mul out");
  rows(gate_up, "silu_mul gate_up");
  check_shape(gate_up, {out.size(0), 2 * out.size(1)}, "silu_mul gate_up");
}

void gated_act(const Tensor& out, const Tensor& gate_up, Activation a, Device dev) {
  SEAM_CHECK(a == Activation::silu || a == Activation::gelu_tanh, "gated_act: unknown activation ", int(a));
  floating(out, dev, "gated_act out");
  same(gate_up, out.dtype, dev, "gated_act gate_up");
  rows(out, "gated_act out");
  rows(gate_up, "gated_act gate_up");
  check_shape(gate_up, {out.size(0), 2 * out.size(1)}, "gated_act gate_up");
  SEAM_CHECK(!overlap(out, gate_up) || out.data == gate_up.data,
             "gated_act: out overlaps gate_up other than in place on its first half");
}

void scale(const Tensor& x, float s, Device dev) {
  floating(x, dev, "scale x");
  rows(x, "scale x");
  SEAM_CHECK(std::isfinite(s), "scale: factor ", s, " is not finite");
}

void softcap(const Tensor& x, float cap, Device dev) {
  same(x, DType::f32, dev, "softcap x");
  rows(x, "softcap x");
  SEAM_CHECK(std::isfinite(cap) && cap > 0.f, "softcap: cap ", cap, " must be finite and > 0");
}

void rms_norm_add(const Tensor& residual, const Tensor& x, const Tensor& weight, Device dev) {
  floating(x, dev, "rms_norm_add x");
  same(residual, x.dtype, dev, "rms_norm_add residual");
  same(weight, x.dtype, dev, "rms_norm_add weight");
  rows(x, "rms_norm_add x");
  rows(residual, "rms_norm_add residual");
  check_shape(residual, {x.size(0), x.size(1)}, "rms_norm_add residual");
  check_shape(weight, {x.size(1)}, "rms_norm_add weight");
  SEAM_CHECK(weight.contiguous(), "rms_norm_add weight: must be contiguous");
  SEAM_CHECK(!overlap(residual, x), "rms_norm_add: residual overlaps x");
}

void store_kv(const Tensor& k_cache, const Tensor& v_cache, const Tensor& k, const Tensor& v, const Tensor& slots,
              Device dev, const KvScales& s) {
  kv_scales(s, "store_kv");
  floating(k, dev, "store_kv k");
  same(v, k.dtype, dev, "store_kv v");
  cache(k_cache, k.dtype, dev, "store_kv k_cache");
  same(v_cache, k_cache.dtype, dev, "store_kv v_cache");
  SEAM_CHECK(k.ndim == 3 && v.ndim == 3 && k.rows_contiguous() && v.rows_contiguous(),
             "store_kv: expected k, v [n, kv_heads, d]");
  SEAM_CHECK(k_cache.contiguous() && v_cache.contiguous(), "store_kv: caches must be contiguous");
  check_shape(k_cache, {-1, k.size(1), k.size(2)}, "store_kv k_cache");
  check_shape(v_cache, {k_cache.size(0), k.size(1), k.size(2)}, "store_kv v_cache");
  check_shape(v, {k.size(0), k.size(1), k.size(2)}, "store_kv v");
  index(slots, k.size(0), dev, "store_kv slots");
}

void attention(const Tensor& out, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
               const AttentionBatch& b, const AttentionOptions& o, Device dev) {
  SEAM_CHECK(std::isfinite(o.scale) && o.scale > 0.f, "attention: scale ", o.scale, " must be finite and > 0");
  SEAM_CHECK(o.sliding_window >= 0, "attention: sliding_window ", o.sliding_window, " is negative");
  SEAM_CHECK(std::isfinite(o.logit_softcap) && o.logit_softcap >= 0.f, "attention: logit_softcap ",
             o.logit_softcap, " must be finite and >= 0 (0 = off)");
  kv_scales(o.kv_scales, "attention");
  floating(q, dev, "attention q");
  same(out, q.dtype, dev, "attention out");
  cache(k_cache, q.dtype, dev, "attention k_cache");
  same(v_cache, k_cache.dtype, dev, "attention v_cache");
  SEAM_CHECK(q.ndim == 3 && q.rows_contiguous(), "attention q: expected [n, heads, d]");
  SEAM_CHECK(out.ndim == 3 && out.rows_contiguous(), "attention out: expected [n, heads, d]");
  check_shape(out, {b.n_tokens, q.size(1), q.size(2)}, "attention out");
  SEAM_CHECK(q.size(0) >= b.n_tokens, "attention: q has fewer rows than n_tokens");
  check_shape(k_cache, {-1, -1, q.size(2)}, "attention k_cache");
  check_shape(v_cache, {k_cache.size(0), k_cache.size(1), q.size(2)}, "attention v_cache");
  SEAM_CHECK(k_cache.contiguous() && v_cache.contiguous(), "attention: caches must be contiguous");
  SEAM_CHECK(q.size(1) % k_cache.size(1) == 0, "attention: heads not a multiple of kv heads");
  SEAM_CHECK(b.n_prefill_seqs >= 0 && b.n_prefill_seqs <= b.n_seqs, "attention: n_prefill_seqs out of [0, n_seqs]");
  SEAM_CHECK(b.n_prefill_tokens >= 0 && b.n_tokens - b.n_prefill_tokens == b.n_seqs - b.n_prefill_seqs,
             "attention: decode rows must have one token each (n_tokens - n_prefill_tokens = ",
             b.n_tokens - b.n_prefill_tokens, ", decode sequences = ", b.n_seqs - b.n_prefill_seqs, ")");
  index(b.qo_indptr, b.n_seqs + 1, dev, "attention qo_indptr");
  index(b.seq_lens, b.n_seqs, dev, "attention seq_lens");
  index(b.req_rows, b.n_seqs, dev, "attention req_rows");
  same(b.page_table, DType::i32, dev, "attention page_table");
  SEAM_CHECK(b.page_table.ndim == 2 && b.page_table.rows_contiguous(), "attention page_table: expected [reqs, ctx]");
}

void gather_rows(const Tensor& out, const Tensor& x, const Tensor& idx, Device dev) {
  on(x, dev, "gather_rows x");
  same(out, x.dtype, dev, "gather_rows out");
  SEAM_CHECK(x.dtype != DType::i64, "gather_rows: int64 rows are not supported");
  rows(x, "gather_rows x");
  rows(out, "gather_rows out");
  check_shape(out, {-1, x.size(1)}, "gather_rows out");
  index(idx, out.size(0), dev, "gather_rows idx");
}

void scatter_i32(const Tensor& dst, const Tensor& pairs, Device dev) {
  same(dst, DType::i32, dev, "scatter_i32 dst");
  same(pairs, DType::i32, dev, "scatter_i32 pairs");
  SEAM_CHECK(dst.contiguous() && pairs.contiguous(), "scatter_i32: dst and pairs must be contiguous");
  check_shape(pairs, {-1, 2}, "scatter_i32 pairs");
}

void apply_penalties(const Tensor& logits, const PenaltyBatch& p, Device dev) {
  if (!logit_rows(logits, p.n, dev, "apply_penalties logits")) return;
  index(p.indptr, p.n + 1, dev, "apply_penalties indptr");
  index(p.tokens, p.nnz, dev, "apply_penalties tokens");
  index(p.out_counts, p.nnz, dev, "apply_penalties out_counts");
  params(p.frequency, DType::f32, p.n, dev, "apply_penalties frequency");
  params(p.presence, DType::f32, p.n, dev, "apply_penalties presence");
  params(p.repetition, DType::f32, p.n, dev, "apply_penalties repetition");
}

void sample(const Tensor& out_ids, const Tensor& logits, const SamplingBatch& s, Device dev) {
  index(out_ids, s.n, dev, "sample out_ids");
  if (!logit_rows(logits, s.n, dev, "sample logits")) return;
  params(s.temperature, DType::f32, s.n, dev, "sample temperature");
  index(s.top_k, s.n, dev, "sample top_k");
  params(s.top_p, DType::f32, s.n, dev, "sample top_p");
  params(s.min_p, DType::f32, s.n, dev, "sample min_p");
  params(s.seed, DType::i64, s.n, dev, "sample seed");
  index(s.step, s.n, dev, "sample step");
}

void apply_logit_bias(const Tensor& logits, const LogitBiasBatch& b, Device dev) {
  if (!logit_rows(logits, b.n, dev, "apply_logit_bias logits")) return;
  index(b.indptr, b.n + 1, dev, "apply_logit_bias indptr");
  index(b.tokens, b.nnz, dev, "apply_logit_bias tokens");
  params(b.values, DType::f32, b.nnz, dev, "apply_logit_bias values");
}

void logprobs(const Tensor& logits, const LogprobBatch& b, Device dev) {
  if (!logit_rows(logits, b.n, dev, "logprobs logits")) return;
  index(b.k, b.n, dev, "logprobs k");
  index(b.sampled, b.n, dev, "logprobs sampled");
  params(b.out_sampled, DType::f32, b.n, dev, "logprobs out_sampled");
  same(b.out_top_ids, DType::i32, dev, "logprobs out_top_ids");
  same(b.out_top, DType::f32, dev, "logprobs out_top");
  SEAM_CHECK(b.out_top_ids.ndim == 2 && b.out_top.ndim == 2 && b.out_top_ids.size(0) >= b.n &&
                 b.out_top.size(0) >= b.n && b.out_top_ids.size(1) == b.out_top.size(1) &&
                 b.out_top_ids.contiguous() && b.out_top.contiguous(),
             "logprobs: out_top_ids / out_top must be contiguous [>= n, max_top] and agree");
}

void apply_token_bitmask(const Tensor& logits, const Tensor& bitmask, const Tensor& rows_idx, Device dev) {
  same(logits, DType::f32, dev, "apply_token_bitmask logits");
  rows(logits, "apply_token_bitmask logits");
  same(bitmask, DType::i32, dev, "apply_token_bitmask bitmask");
  const int64_t vocab = logits.size(1), n_words = (vocab + 31) / 32;
  SEAM_CHECK(bitmask.ndim == 2 && bitmask.contiguous() && bitmask.size(1) >= n_words,
             "apply_token_bitmask bitmask: expected contiguous [n_masked, >= ", n_words, "] i32 words, got ",
             bitmask.shape_str());
  SEAM_CHECK(bitmask.size(0) <= logits.size(0), "apply_token_bitmask: ", bitmask.size(0), " masked rows but ",
             logits.size(0), " logit rows");
  if (bitmask.size(0) == 0) return;
  index(rows_idx, bitmask.size(0), dev, "apply_token_bitmask rows");
}

void all_gather_cols(const Tensor& out, const Tensor& in, const Tensor& scratch, int64_t n_ranks) {
  const int64_t n = in.size(0), c = in.size(1);
  check_shape(out, {n, n_ranks * c}, "all_gather_cols out");
  SEAM_CHECK(in.contiguous() && out.contiguous() && scratch.numel() >= n_ranks * n * c && in.dtype == out.dtype &&
                 scratch.dtype == out.dtype,
             "all_gather_cols: contiguous tensors of one dtype, scratch of size * n * c");
}

}  // namespace seam::op_checks
