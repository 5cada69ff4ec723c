// CudaBackend ops: boundary checks (shapes, dtypes, devices), then the launcher of
// each op's kernel on the compute stream. Host scalars (sizes) are baked into a
// captured graph; everything per-step is read from device buffers by the kernels.
#include <algorithm>
#include <cstdint>

#include "backend/cuda/apply_penalties.h"
#include "backend/cuda/attention_decode.h"
#include "backend/cuda/attention_generic.h"
#include "backend/cuda/attention_prefill.h"
#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/gemv.h"
#include "backend/cuda/gather_rows.h"
#include "backend/cuda/rms_norm.h"
#include "backend/cuda/rope.h"
#include "backend/cuda/sample.h"
#include "backend/cuda/silu_mul.h"
#include "backend/cuda/store_kv.h"

namespace seam::cuda {

namespace {

void check_on_gpu(const Tensor& t, const char* what) {
  SEAM_CHECK(t.defined(), what, ": tensor is undefined");
  SEAM_CHECK(t.device == Device::cuda, what, ": tensor is not on the cuda device");
}
bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }
bool is_float(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }
void check_float(const Tensor& t, const char* what) {
  check_on_gpu(t, what);
  SEAM_CHECK(is_float(t.dtype), what, ": dtype ", dtype_name(t.dtype), ", expected float32, float16 or bfloat16");
}
void check_same(const Tensor& t, DType d, const char* what) {
  check_on_gpu(t, what);
  check_dtype(t, d, what);
}
void check_index(const Tensor& t, int64_t n, const char* what) {
  check_same(t, DType::i32, what);
  SEAM_CHECK(t.ndim == 1 && t.size(0) >= n && t.contiguous(), what, ": expected [", n, "] i32, got ", t.shape_str());
}
// A 2-D view with unit column stride (rows may be strided).
void check_rows(const Tensor& t, const char* what) {
  SEAM_CHECK(t.ndim == 2 && t.rows_contiguous(), what, ": expected [n, d] with packed rows, got ", t.shape_str());
}

void check_rope(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor& inv_freq) {
  check_float(q, "rope q");
  check_same(k, q.dtype, "rope k");
  SEAM_CHECK(q.ndim == 3 && k.ndim == 3 && q.rows_contiguous() && k.rows_contiguous(),
             "rope: expected q [n, heads, d], k [n, kv_heads, d]");
  const int64_t d = q.size(2);
  SEAM_CHECK(k.size(2) == d && k.size(0) == q.size(0) && d % 2 == 0, "rope: q/k shapes disagree");
  check_index(positions, q.size(0), "rope positions");
  check_same(inv_freq, DType::f32, "rope inv_freq");
  check_shape(inv_freq, {d / 2}, "rope inv_freq");
}
void check_store_kv(const Tensor& k_cache, const Tensor& v_cache, const Tensor& k, const Tensor& v,
                    const Tensor& slots) {
  check_float(k, "store_kv k");
  check_same(v, k.dtype, "store_kv v");
  check_same(k_cache, k.dtype, "store_kv k_cache");
  check_same(v_cache, k.dtype, "store_kv v_cache");
  SEAM_CHECK(k.ndim == 3 && v.ndim == 3 && k.rows_contiguous() && v.rows_contiguous(),
             "store_kv: expected k, v [n, kv_heads, d]");
  SEAM_CHECK(k_cache.contiguous() && v_cache.contiguous(), "store_kv: caches must be contiguous");
  check_shape(k_cache, {-1, k.size(1), k.size(2)}, "store_kv k_cache");
  check_shape(v_cache, {k_cache.size(0), k.size(1), k.size(2)}, "store_kv v_cache");
  check_shape(v, {k.size(0), k.size(1), k.size(2)}, "store_kv v");
  check_index(slots, k.size(0), "store_kv slots");
}

}  // namespace

void CudaBackend::embedding(Tensor out, Tensor ids, Tensor table) {
  check_float(table, "embedding table");
  check_same(out, table.dtype, "embedding out");
  check_rows(table, "embedding table");
  check_rows(out, "embedding out");
  check_shape(out, {-1, table.size(1)}, "embedding out");
  check_index(ids, out.size(0), "embedding ids");
  launch_gather_rows(out, table, ids, stream_);
}

void CudaBackend::rms_norm(Tensor out, Tensor x, Tensor weight, float eps) {
  check_float(x, "rms_norm x");
  check_same(out, x.dtype, "rms_norm out");
  check_same(weight, x.dtype, "rms_norm weight");
  SEAM_CHECK((x.ndim == 2 || x.ndim == 3) && x.rows_contiguous() && out.rows_contiguous(),
             "rms_norm x: expected [n, d] or [n, heads, d] with packed rows");
  SEAM_CHECK(out.ndim == x.ndim && out.size(0) == x.size(0) && out.size(-1) == x.size(-1) &&
                 (x.ndim == 2 || out.size(1) == x.size(1)),
             "rms_norm: out ", out.shape_str(), " does not match x ", x.shape_str());
  check_shape(weight, {x.size(-1)}, "rms_norm weight");
  launch_rms_norm(out, x, weight, eps, stream_);
}

void CudaBackend::add_rms_norm(Tensor out, Tensor residual, Tensor delta, Tensor weight, float eps) {
  check_float(residual, "add_rms_norm residual");
  check_same(out, residual.dtype, "add_rms_norm out");
  check_same(delta, residual.dtype, "add_rms_norm delta");
  check_same(weight, residual.dtype, "add_rms_norm weight");
  check_rows(out, "add_rms_norm out");
  check_rows(residual, "add_rms_norm residual");
  check_rows(delta, "add_rms_norm delta");
  check_shape(residual, {out.size(0), out.size(1)}, "add_rms_norm residual");
  check_shape(delta, {out.size(0), out.size(1)}, "add_rms_norm delta");
  check_shape(weight, {out.size(1)}, "add_rms_norm weight");
  launch_add_rms_norm(out, residual, delta, weight, eps, stream_);
}

void CudaBackend::linear(Tensor out, Tensor x, Tensor w, Tensor bias) {
  check_float(x, "linear x");
  check_same(w, x.dtype, "linear w");
  check_on_gpu(out, "linear out");
  SEAM_CHECK(out.dtype == x.dtype || out.dtype == DType::f32, "linear out: dtype ", dtype_name(out.dtype),
             ", expected ", dtype_name(x.dtype), " or float32");
  check_rows(x, "linear x");
  check_rows(out, "linear out");
  SEAM_CHECK(w.ndim == 2 && w.contiguous(), "linear w: expected contiguous [out, in], got ", w.shape_str());
  check_shape(out, {x.size(0), w.size(0)}, "linear out");
  SEAM_CHECK(x.size(1) == w.size(1), "linear: x has ", x.size(1), " columns, w has ", w.size(1));
  if (bias.defined()) {
    check_on_gpu(bias, "linear bias");
    SEAM_CHECK(bias.dtype == w.dtype || bias.dtype == out.dtype, "linear bias: dtype ", dtype_name(bias.dtype));
    SEAM_CHECK(bias.contiguous(), "linear bias: must be contiguous");
    check_shape(bias, {w.size(0)}, "linear bias");
  }
  // Decode-sized batches stream the weights through the GEMV kernel; everything else
  // (prefill, large decode batches, float32) goes to cuBLASLt.
  if (gemv_applies(out, x, w, bias))
    launch_gemv(out, x, w, bias, stream_);
  else
    gemm_->run(out, x, w, bias, stream_);
}

void CudaBackend::rope(Tensor q, Tensor k, Tensor positions, Tensor inv_freq) {
  check_rope(q, k, positions, inv_freq);
  launch_rope(q, k, positions, inv_freq, stream_);
}

void CudaBackend::silu_mul(Tensor out, Tensor gate_up) {
  check_float(out, "silu_mul out");
  check_same(gate_up, out.dtype, "silu_mul gate_up");
  check_rows(out, "silu_mul out");
  check_rows(gate_up, "silu_mul gate_up");
  check_shape(gate_up, {out.size(0), 2 * out.size(1)}, "silu_mul gate_up");
  launch_silu_mul(out, gate_up, stream_);
}

void CudaBackend::store_kv(Tensor k_cache, Tensor v_cache, Tensor k, Tensor v, Tensor slots) {
  check_store_kv(k_cache, v_cache, k, v, slots);
  launch_store_kv(k_cache, v_cache, k, v, slots, stream_);
}

void CudaBackend::rope_store_kv(Tensor q, Tensor k, Tensor v, Tensor positions, Tensor inv_freq, Tensor k_cache,
                                Tensor v_cache, Tensor slots) {
  check_rope(q, k, positions, inv_freq);
  check_store_kv(k_cache, v_cache, k, v, slots);
  launch_rope_store_kv(q, k, v, positions, inv_freq, k_cache, v_cache, slots, stream_);
}

void CudaBackend::attention(Tensor out, Tensor q, Tensor k_cache, Tensor v_cache, const AttentionBatch& b,
                            float scale) {
  check_float(q, "attention q");
  check_same(out, q.dtype, "attention out");
  check_same(k_cache, q.dtype, "attention k_cache");
  check_same(v_cache, q.dtype, "attention v_cache");
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
  check_index(b.qo_indptr, b.n_seqs + 1, "attention qo_indptr");
  check_index(b.seq_lens, b.n_seqs, "attention seq_lens");
  check_index(b.req_rows, b.n_seqs, "attention req_rows");
  check_same(b.page_table, DType::i32, "attention page_table");
  SEAM_CHECK(b.page_table.ndim == 2 && b.page_table.rows_contiguous(), "attention page_table: expected [reqs, ctx]");
  if (b.n_tokens == 0 || b.n_seqs == 0) return;

  AttentionParams p;
  p.out = out.data;
  p.out_stride = out.stride[0];
  p.q = q.data;
  p.q_stride = q.stride[0];
  p.k_cache = k_cache.data;
  p.v_cache = v_cache.data;
  p.n_heads = int(q.size(1));
  p.n_kv_heads = int(k_cache.size(1));
  p.head_dim = int(q.size(2));
  p.group = p.n_heads / p.n_kv_heads;
  p.qo_indptr = b.qo_indptr.ptr<int32_t>();
  p.seq_lens = b.seq_lens.ptr<int32_t>();
  p.req_rows = b.req_rows.ptr<int32_t>();
  p.page_table = b.page_table.ptr<int32_t>();
  p.pt_stride = b.page_table.stride[0];
  p.n_tokens = b.n_tokens;
  p.n_seqs = b.n_seqs;
  p.n_prefill_seqs = b.n_prefill_seqs;
  p.n_prefill_tokens = b.n_prefill_tokens;
  p.max_seq_len = b.max_seq_len;
  p.scale = scale;

  // The tensor-core kernels read q/out as 4-byte pairs and K/V rows as 16-byte chunks.
  const bool pairs_aligned = reinterpret_cast<uintptr_t>(q.data) % 4 == 0 && q.stride[0] % 2 == 0 &&
                             reinterpret_cast<uintptr_t>(out.data) % 4 == 0 && out.stride[0] % 2 == 0 &&
                             aligned16(k_cache.data) && aligned16(v_cache.data);
  if (pairs_aligned && flash_prefill_supported(q.dtype, p.head_dim))
    launch_flash_prefill(p, q.dtype, stream_);
  else
    launch_attention_generic(p, q.dtype, 0, b.n_prefill_tokens, stream_);
  if (pairs_aligned && flash_decode_supported(q.dtype, p.head_dim, p.group))
    launch_flash_decode(p, q.dtype, attention_scratch_, kAttentionScratchBytes, n_sms_, stream_);
  else
    launch_attention_generic(p, q.dtype, b.n_prefill_tokens, b.n_tokens - b.n_prefill_tokens, stream_);
}

void CudaBackend::gather_rows(Tensor out, Tensor x, Tensor idx) {
  check_on_gpu(x, "gather_rows x");
  check_same(out, x.dtype, "gather_rows out");
  SEAM_CHECK(x.dtype != DType::i64, "gather_rows: int64 rows are not supported");
  check_rows(x, "gather_rows x");
  check_rows(out, "gather_rows out");
  check_shape(out, {-1, x.size(1)}, "gather_rows out");
  check_index(idx, out.size(0), "gather_rows idx");
  launch_gather_rows(out, x, idx, stream_);
}

void CudaBackend::apply_penalties(Tensor logits, const PenaltyBatch& p) {
  check_same(logits, DType::f32, "apply_penalties logits");
  check_rows(logits, "apply_penalties logits");
  SEAM_CHECK(logits.size(0) >= p.n, "apply_penalties: more rows than logits");
  if (p.n == 0) return;
  check_index(p.indptr, p.n + 1, "apply_penalties indptr");
  check_index(p.tokens, p.nnz, "apply_penalties tokens");
  check_index(p.out_counts, p.nnz, "apply_penalties out_counts");
  check_same(p.frequency, DType::f32, "apply_penalties frequency");
  check_same(p.presence, DType::f32, "apply_penalties presence");
  check_same(p.repetition, DType::f32, "apply_penalties repetition");
  launch_apply_penalties(logits, p, stream_);
}

void CudaBackend::sample(Tensor out_ids, Tensor logits, const SamplingBatch& s) {
  check_same(logits, DType::f32, "sample logits");
  check_rows(logits, "sample logits");
  check_index(out_ids, s.n, "sample out_ids");
  SEAM_CHECK(logits.size(0) >= s.n, "sample: fewer logits rows than n");
  if (s.n == 0) return;
  check_same(s.temperature, DType::f32, "sample temperature");
  check_index(s.top_k, s.n, "sample top_k");
  check_same(s.top_p, DType::f32, "sample top_p");
  check_same(s.min_p, DType::f32, "sample min_p");
  check_same(s.seed, DType::i64, "sample seed");
  check_index(s.step, s.n, "sample step");
  launch_sample(out_ids, logits, s, stream_);
}

}  // namespace seam::cuda
