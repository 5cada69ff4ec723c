#include "model/llama_model.h"

#include <cmath>

#include "model/fp8_linear.h"

namespace seam {

LlamaModel::LlamaModel(Backend& backend, const ModelConfig& c, const Checkpoint& ck, DType act)
    : backend_(backend), config_(c), act_(act), format_(dense_weight_format(act)) {
  SEAM_CHECK(backend.device() != Device::cpu || act == DType::f32,
             "the cpu backend computes in float32 only (got --dtype ", dtype_name(act), ")");
  // Upload order as before the Linear split: embedding, final norm, head, inv_freq, then
  // each layer's weights in forward order.
  auto upload = [&](std::vector<const HostTensor*> parts) {
    DeviceWeight w = DeviceWeight::upload(backend_, parts, act);
    weight_bytes_ += w.bytes();
    return w;
  };
  auto linear = [&](std::vector<const HostTensor*> w, std::vector<const HostTensor*> b) {
    Linear l = load_linear(backend_, w, b, format_, c.quant, ck);  // dense or FP8 (fp8_linear.h)
    weight_bytes_ += l.bytes();
    return l;
  };
  embed_ = upload({&ck.embed_tokens});
  norm_ = upload({&ck.norm});
  // Tied: the head is the embedding matrix itself (no second copy, counted once).
  lm_head_ = c.tie_word_embeddings ? Linear::shared(backend_, embed_, format_) : linear({&ck.lm_head}, {});
  inv_freq_ = DeviceWeight::upload_f32(backend_, rope_inv_freq(c));
  for (const LayerTensors& lt : ck.layers) {
    Layer l;
    l.ln_in = upload({&lt.input_layernorm});
    if (c.attention_bias)
      l.qkv = linear({&lt.q_proj, &lt.k_proj, &lt.v_proj}, {&lt.q_bias, &lt.k_bias, &lt.v_bias});
    else
      l.qkv = linear({&lt.q_proj, &lt.k_proj, &lt.v_proj}, {});
    if (c.qk_norm) {
      l.q_norm = upload({&lt.q_norm});
      l.k_norm = upload({&lt.k_norm});
    }
    l.o_proj = c.o_proj_bias ? linear({&lt.o_proj}, {&lt.o_bias}) : linear({&lt.o_proj}, {});
    l.ln_post = upload({&lt.post_attention_layernorm});
    l.gate_up = linear({&lt.gate_proj, &lt.up_proj}, {});
    l.down = linear({&lt.down_proj}, {});
    layers_.push_back(std::move(l));
  }
}

void LlamaModel::pre_attention(int i, const ForwardBuffers& buf, const KvCacheView& kv, int n) const {
  const Layer& l = layers_[size_t(i)];
  const ModelConfig& c = config_;
  Tensor residual = buf.residual.rows(n);  // [n, hidden]
  if (i == 0) backend_.embedding(residual, buf.input_ids.rows(n), embed_.tensor());
  Tensor qkv = buf.qkv.rows(n);  // [n, q_size + 2 * kv_size]
  const Tensor& k_cache = kv.k[size_t(i)];
  const Tensor& v_cache = kv.v[size_t(i)];
  if (!c.qk_norm) {  // norm, qkv, RoPE and the KV store: one fused op (one kernel at batch 1 on CUDA)
    RopeStoreArgs r;
    r.n_heads = c.n_heads;
    r.positions = buf.positions.rows(n);
    r.inv_freq = inv_freq_.tensor();
    r.k_cache = k_cache;
    r.v_cache = v_cache;
    r.slots = buf.out_cache_loc.rows(n);
    l.qkv.apply_rms_normed_rope_store(qkv, buf.normed.rows(n), residual, l.ln_in.tensor(), c.rms_norm_eps, r);
    return;
  }
  l.qkv.apply_rms_normed(qkv, buf.normed.rows(n), residual, l.ln_in.tensor(), c.rms_norm_eps);
  Tensor q = qkv.slice_cols(0, c.q_size()).unflatten_last(c.n_heads, c.head_dim);  // [n, heads, d]
  Tensor k = qkv.slice_cols(c.q_size(), c.kv_size()).unflatten_last(c.n_kv_heads, c.head_dim);
  Tensor v = qkv.slice_cols(c.q_size() + c.kv_size(), c.kv_size()).unflatten_last(c.n_kv_heads, c.head_dim);
  // Qwen3: RMSNorm over each head's d values, in place, between the projection and RoPE.
  backend_.rms_norm(q, q, l.q_norm.tensor(), c.rms_norm_eps);
  backend_.rms_norm(k, k, l.k_norm.tensor(), c.rms_norm_eps);
  backend_.rope_store_kv(q, k, v, buf.positions.rows(n), inv_freq_.tensor(), k_cache, v_cache,
                         buf.out_cache_loc.rows(n));
}

void LlamaModel::post_attention(int i, const ForwardBuffers& buf, int n) const {
  const Layer& l = layers_[size_t(i)];
  Tensor residual = buf.residual.rows(n), gate_up = buf.gate_up.rows(n), act = buf.act.rows(n);
  l.o_proj.accumulate(residual, buf.attn_out.rows(n));  // residual += o_proj(attn)
  l.gate_up.apply_rms_normed_silu_mul(act, gate_up, buf.normed.rows(n), residual, l.ln_post.tensor(),
                                      config_.rms_norm_eps);
  l.down.accumulate(residual, act);  // residual += down_proj(act)
}

void LlamaModel::run_piece(int i, const ForwardBuffers& buf, const KvCacheView& kv, int n) const {
  SEAM_ASSERT(i >= 0 && i < n_pieces() && n > 0 && n <= buf.residual.size(0));
  if (i > 0) post_attention(i - 1, buf, n);
  if (i < config_.n_layers) pre_attention(i, buf, kv, n);
}

void LlamaModel::run_attention(int layer, const ForwardBuffers& buf, const KvCacheView& kv,
                               const AttentionBatch& b) const {
  const ModelConfig& c = config_;
  Tensor q = buf.qkv.rows(b.n_tokens).slice_cols(0, c.q_size()).unflatten_last(c.n_heads, c.head_dim);
  Tensor out = buf.attn_out.rows(b.n_tokens).view({b.n_tokens, c.n_heads, c.head_dim});
  backend_.attention(out, q, kv.k[size_t(layer)], kv.v[size_t(layer)], b, 1.f / std::sqrt(float(c.head_dim)));
}

void LlamaModel::run_logits(const ForwardBuffers& buf, int n_seqs) const {
  // Only the last row of each sequence needs the final norm: gather first, then norm + lm_head.
  Tensor last = buf.last_hidden.rows(n_seqs);  // [n_seqs, hidden]
  backend_.gather_rows(last, buf.residual, buf.last_idx.rows(n_seqs));
  lm_head_.apply_rms_normed(buf.logits.rows(n_seqs), buf.normed.rows(n_seqs), last, norm_.tensor(),
                            config_.rms_norm_eps);
}

}  // namespace seam
