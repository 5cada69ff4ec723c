#include "model/llama_model.h"

#include <cmath>
#include <cstring>

#include "kv/kv_pool.h"

namespace seam {


Tensor LlamaModel::upload(const std::vector<const HostTensor*>& parts, DType dtype) {
  // Concatenates parts along dim 0 (fused qkv / gate_up) in `dtype`. Parts
  // already in `dtype` are copied as bytes; others go through float32 once.
  const HostTensor& first = *parts[0];
  int64_t rows = 0;
  for (const HostTensor* p : parts) rows += p->shape.empty() ? 1 : p->shape[0];
  const int64_t cols = first.shape.size() == 2 ? first.shape[1] : 1;
  const size_t esize = dtype_size(dtype);
  std::vector<uint8_t> staged(size_t(rows * cols) * esize);
  size_t at = 0;
  std::vector<float> f32;
  for (const HostTensor* p : parts) {
    const size_t n = size_t(p->numel());
    if (p->dtype == dtype) {
      std::memcpy(staged.data() + at, p->data, n * esize);
    } else {
      f32.resize(n);
      convert_to_f32(p->data, p->dtype, f32.data(), n);
      convert_from_f32(f32.data(), dtype, staged.data() + at, n);
    }
    at += n * esize;
  }
  void* dev = backend_.alloc(staged.size());
  allocations_.push_back(dev);
  backend_.copy_h2d(dev, staged.data(), staged.size());
  backend_.synchronize();  // `staged` dies at return
  weight_bytes_ += staged.size();
  return first.shape.size() == 2 ? Tensor(dev, dtype, backend_.device(), {rows, cols})
                                 : Tensor(dev, dtype, backend_.device(), {rows});
}

LlamaModel::LlamaModel(Backend& backend, const ModelConfig& c, const Checkpoint& ck, DType act)
    : backend_(backend), config_(c), act_(act) {
  SEAM_CHECK(backend.device() != Device::cpu || act == DType::f32,
             "the cpu backend computes in float32 only (got --dtype ", dtype_name(act), ")");
  embed_ = upload({&ck.embed_tokens}, act);
  norm_ = upload({&ck.norm}, act);
  lm_head_ = c.tie_word_embeddings ? embed_ : upload({&ck.lm_head}, act);
  std::vector<float> inv = rope_inv_freq(c);
  void* f = backend_.alloc(inv.size() * 4);
  allocations_.push_back(f);
  backend_.copy_h2d(f, inv.data(), inv.size() * 4);
  backend_.synchronize();
  inv_freq_ = Tensor(f, DType::f32, backend_.device(), {int64_t(inv.size())});
  for (const LayerTensors& lt : ck.layers) {
    Layer l;
    l.ln_in = upload({&lt.input_layernorm}, act);
    l.w_qkv = upload({&lt.q_proj, &lt.k_proj, &lt.v_proj}, act);
    if (c.attention_bias) l.b_qkv = upload({&lt.q_bias, &lt.k_bias, &lt.v_bias}, act);
    if (c.qk_norm) {
      l.q_norm = upload({&lt.q_norm}, act);
      l.k_norm = upload({&lt.k_norm}, act);
    }
    l.w_o = upload({&lt.o_proj}, act);
    if (c.o_proj_bias) l.b_o = upload({&lt.o_bias}, act);
    l.ln_post = upload({&lt.post_attention_layernorm}, act);
    l.w_gate_up = upload({&lt.gate_proj, &lt.up_proj}, act);
    l.w_down = upload({&lt.down_proj}, act);
    layers_.push_back(l);
  }
}

LlamaModel::~LlamaModel() {
  for (void* p : allocations_) backend_.release(p);
}

void LlamaModel::pre_attention(int i, StepBuffers& buf, const KvPool& kv, int n) const {
  const Layer& l = layers_[size_t(i)];
  const ModelConfig& c = config_;
  Tensor residual = buf.residual.rows(n);  // [n, hidden]
  if (i == 0) backend_.embedding(residual, buf.input_ids.rows(n), embed_);
  Tensor qkv = buf.qkv.rows(n);  // [n, q_size + 2 * kv_size]
  if (!c.qk_norm) {  // norm, qkv, RoPE and the KV store: one fused op (one kernel at batch 1 on CUDA)
    RopeStoreArgs r;
    r.n_heads = c.n_heads;
    r.positions = buf.positions.rows(n);
    r.inv_freq = inv_freq_;
    r.k_cache = kv.k_cache(i);
    r.v_cache = kv.v_cache(i);
    r.slots = buf.out_cache_loc.rows(n);
    backend_.rms_norm_qkv_rope_store(qkv, buf.normed.rows(n), residual, l.ln_in, c.rms_norm_eps, l.w_qkv, l.b_qkv,
                                     r);
    return;
  }
  backend_.rms_norm_linear(qkv, buf.normed.rows(n), residual, l.ln_in, c.rms_norm_eps, l.w_qkv, l.b_qkv);
  Tensor q = qkv.slice_cols(0, c.q_size()).unflatten_last(c.n_heads, c.head_dim);  // [n, heads, d]
  Tensor k = qkv.slice_cols(c.q_size(), c.kv_size()).unflatten_last(c.n_kv_heads, c.head_dim);
  Tensor v = qkv.slice_cols(c.q_size() + c.kv_size(), c.kv_size()).unflatten_last(c.n_kv_heads, c.head_dim);
  // Qwen3: RMSNorm over each head's d values, in place, between the projection and RoPE.
  backend_.rms_norm(q, q, l.q_norm, c.rms_norm_eps);
  backend_.rms_norm(k, k, l.k_norm, c.rms_norm_eps);
  backend_.rope_store_kv(q, k, v, buf.positions.rows(n), inv_freq_, kv.k_cache(i), kv.v_cache(i),
                         buf.out_cache_loc.rows(n));
}

void LlamaModel::post_attention(int i, StepBuffers& buf, int n) const {
  const Layer& l = layers_[size_t(i)];
  Tensor residual = buf.residual.rows(n), gate_up = buf.gate_up.rows(n), act = buf.act.rows(n);
  backend_.linear_accumulate(residual, buf.attn_out.rows(n), l.w_o, l.b_o);  // residual += o_proj(attn)
  backend_.rms_norm_gate_up_silu(act, gate_up, buf.normed.rows(n), residual, l.ln_post, config_.rms_norm_eps,
                                 l.w_gate_up);
  backend_.linear_accumulate(residual, act, l.w_down, Tensor());  // residual += down_proj(act)
}

void LlamaModel::run_piece(int i, StepBuffers& buf, const KvPool& kv, int n) const {
  SEAM_ASSERT(i >= 0 && i < n_pieces() && n > 0 && n <= buf.sizes.max_tokens);
  if (i > 0) post_attention(i - 1, buf, n);
  if (i < config_.n_layers) pre_attention(i, buf, kv, n);
}

void LlamaModel::run_attention(int layer, StepBuffers& buf, const KvPool& kv, const AttentionBatch& b) const {
  const ModelConfig& c = config_;
  Tensor q = buf.qkv.rows(b.n_tokens).slice_cols(0, c.q_size()).unflatten_last(c.n_heads, c.head_dim);
  Tensor out = buf.attn_out.rows(b.n_tokens).view({b.n_tokens, c.n_heads, c.head_dim});
  backend_.attention(out, q, kv.k_cache(layer), kv.v_cache(layer), b, 1.f / std::sqrt(float(c.head_dim)));
}

void LlamaModel::run_logits(StepBuffers& buf, int n_seqs) const {
  // Only the last row of each sequence needs the final norm: gather first, then norm + lm_head.
  Tensor last = buf.last_hidden.rows(n_seqs);  // [n_seqs, hidden]
  backend_.gather_rows(last, buf.residual, buf.last_idx.rows(n_seqs));
  backend_.rms_norm_linear(buf.logits.rows(n_seqs), buf.normed.rows(n_seqs), last, norm_, config_.rms_norm_eps,
                           lm_head_, Tensor());
}

}  // namespace seam
