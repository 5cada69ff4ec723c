#include "model/llama_model.h"

#include <cmath>

#include "core/log.h"
#include "model/fp8_linear.h"
#include "model/kv_cache_scales.h"
#include "model/tp_shard.h"
#include "model/weight_folds.h"

namespace seam {

LlamaModel::LlamaModel(Backend& backend, const ModelConfig& c, const Checkpoint& ck, DType act)
    : backend_(backend), config_(c), recipe_(decoder_recipe(c, act)), act_(act), format_(dense_weight_format(act)) {
  SEAM_CHECK(backend.device() != Device::cpu || act == DType::f32,
             "the cpu backend computes in float32 only (got --dtype ", dtype_name(act), ")");
  // The FP8 KV cache's per-layer scales (1.0 where the checkpoint has none; a float cache ignores them).
  const std::vector<KvScales> kv_scales = kv_cache_scales(ck.kv_scales, c.n_layers);
  for (size_t i = 0; i < recipe_.layers.size(); ++i) recipe_.layers[i].attention.kv_scales = kv_scales[i];
  const DecoderRecipe& r = recipe_;
  // The rotary-row fold acts on the projection's output before RoPE: a bias or a q/k norm in
  // between would break it (Phi-3 has neither).
  SEAM_CHECK(r.rotary_rows_factor == 1.f || (!c.attention_bias && !c.qk_norm),
             "LongRoPE with partial rotary needs q/k projections without bias or norm");
  // MoeLayer's experts and shared expert are SiLU-gated and it replaces the Llama-style MLP
  // sublayer (every MoE architecture reads hidden_act: silu and has no sandwich norms).
  SEAM_CHECK(!c.moe.enabled() || (r.activation == Activation::silu && !r.sandwich_norms),
             "mixture-of-experts layers support SiLU experts without sandwich norms only");
  // Upload order as before the Linear split: embedding, final norm, head, inv_freq, then
  // each layer's weights in forward order.
  auto upload = [&](std::vector<const HostTensor*> parts) {
    DeviceWeight w = DeviceWeight::upload(backend_, parts, act);
    weight_bytes_ += w.bytes();
    return w;
  };
  // An RMSNorm weight; Gemma's (1 + w) is folded here, in float32, before the conversion to
  // `act` (so a bf16 weight holds round(1 + w), as close to transformers' float32 (1 + w) as bf16 allows).
  auto upload_norm = [&](const HostTensor& w) {
    if (!r.norm_plus_one) return upload({&w});
    std::vector<float> storage;
    HostTensor folded = fold_plus_one(w, storage);
    return upload({&folded});
  };
  auto linear = [&](std::vector<const HostTensor*> w, std::vector<const HostTensor*> b,
                    const std::vector<Linear::RowFold>& folds = {}) {
    Linear l = load_linear(backend_, w, b, format_, c.quant, ck, folds);  // dense or FP8 (fp8_linear.h)
    weight_bytes_ += l.bytes();
    return l;
  };
  const TpShard& tp = c.tp;
  // Row-parallel slices are copied out of the mapping; they live until the weights are uploaded.
  std::vector<std::vector<uint8_t>> col_storage;
  auto cols = [&](const HostTensor& w, int64_t begin, int64_t n) {
    col_storage.emplace_back();
    return slice_cols(w, begin, n, col_storage.back());
  };
  if (tp.active()) {
    // Vocabulary-parallel embedding and head: this rank's rows of each; a tied head is the
    // embedding shard itself (the same rows).
    const HostTensor embed = ck.embed_tokens.rows(tp.vocab_begin, tp.vocab_local);
    embed_ = upload({&embed});
  } else {
    embed_ = upload({&ck.embed_tokens});
  }
  norm_ = upload_norm(ck.norm);
  if (tp.active()) {
    if (c.tie_word_embeddings) {
      lm_head_ = Linear::shared(backend_, embed_, format_);
    } else {
      const HostTensor head = ck.lm_head.rows(tp.vocab_begin, tp.vocab_local);
      lm_head_ = linear({&head}, {});
    }
  } else {
    // Tied: the head is the embedding matrix itself (no second copy, counted once).
    lm_head_ = c.tie_word_embeddings ? Linear::shared(backend_, embed_, format_) : linear({&ck.lm_head}, {});
  }
  // Each rotary table is computed in double and uploaded once as float hi + lo (rope_angle.h).
  const auto upload_table = [&](const std::vector<double>& f, DeviceWeight& hi, DeviceWeight& lo) {
    std::vector<float> h, l;
    split_inv_freq(f, h, l);
    hi = DeviceWeight::upload_f32(backend_, h);
    lo = DeviceWeight::upload_f32(backend_, l);
  };
  const RopeConfig global = c.rope_global();
  upload_table(rope_inv_freq_exact(global, c.rotary_dim), inv_freq_, inv_freq_lo_);
  if (c.rope_local != global)  // Gemma 3's local layers: their own base / scaling
    upload_table(rope_inv_freq_exact(c.rope_local, c.rotary_dim), inv_freq_local_, inv_freq_local_lo_);
  if (c.rope_scaling.type == RopeType::longrope)
    upload_table(rope_inv_freq_exact(global, c.rotary_dim, /*long_table=*/true), inv_freq_long_, inv_freq_long_lo_);
  for (const LayerTensors& lt : ck.layers) {
    Layer l;
    l.ln_in = upload_norm(lt.input_layernorm);
    std::vector<float> q_store, k_store;
    // LongRoPE's partial-rotary factor on q / k's rotary rows: folded into float values here, or,
    // for a serialized FP8 part (whose codes stay as stored), into its row scales at load.
    const Linear::RowFold rotary_fold{c.head_dim, c.rotary_dim, r.rotary_rows_factor};
    auto rotary_folded = [&](const HostTensor& w, std::vector<float>& store) {
      const bool fp8_codes = c.quant.serialized() && w.dtype == DType::fp8_e4m3;
      return r.rotary_rows_factor == 1.f || fp8_codes
                 ? w
                 : fold_rotary_rows(w, c.head_dim, c.rotary_dim, r.rotary_rows_factor, store);
    };
    // Column-parallel q/k/v: the rank's heads (rows), each part sliced on its own (a fused Phi-3
    // qkv_proj arrives here already split into its parts). TP 1: the whole tensors.
    const int64_t hd = c.head_dim, q0 = int64_t(tp.q_head_begin) * hd, kv0 = int64_t(tp.kv_head_begin) * hd;
    const HostTensor q_rows = lt.q_proj.rows(q0, c.q_size()), k_rows = lt.k_proj.rows(kv0, c.kv_size()),
                     v = lt.v_proj.rows(kv0, c.kv_size());
    const HostTensor q = rotary_folded(q_rows, q_store), k = rotary_folded(k_rows, k_store);
    if (c.attention_bias) {
      const HostTensor qb = slice_1d(lt.q_bias, q0, c.q_size()), kb = slice_1d(lt.k_bias, kv0, c.kv_size()),
                       vb = slice_1d(lt.v_bias, kv0, c.kv_size());
      l.qkv = linear({&q, &k, &v}, {&qb, &kb, &vb}, {rotary_fold, rotary_fold, Linear::RowFold{}});
    } else {
      l.qkv = linear({&q, &k, &v}, {}, {rotary_fold, rotary_fold, Linear::RowFold{}});
    }
    if (c.qk_norm) {
      l.q_norm = upload_norm(lt.q_norm);
      l.k_norm = upload_norm(lt.k_norm);
    }
    // Row-parallel o_proj: the columns of the rank's heads; its bias on rank 0 only (added once
    // to the all-reduced sum).
    const HostTensor o = tp.active() ? cols(lt.o_proj, q0, c.q_size()) : lt.o_proj;
    l.o_proj = c.o_proj_bias && tp.rank == 0 ? linear({&o}, {&lt.o_bias}) : linear({&o}, {});
    l.ln_post = upload_norm(lt.post_attention_layernorm);
    if (r.sandwich_norms) {
      l.ln_pre_ff = upload_norm(lt.pre_feedforward_layernorm);
      l.ln_post_ff = upload_norm(lt.post_feedforward_layernorm);
    }
    if (lt.moe.defined()) {
      MoeTensors shard_storage;
      const MoeTensors& moe = tp.active() ? (shard_storage = shard_moe_tensors(lt.moe, c, col_storage)) : lt.moe;
      l.moe = std::make_unique<MoeLayer>(backend_, c, moe, format_, ck);
      weight_bytes_ += l.moe->bytes();
    } else {
      // Column-parallel gate/up (each half sliced on its own), row-parallel down.
      const int64_t i0 = tp.inter_begin, ni = c.intermediate_size;
      const HostTensor gate = lt.gate_proj.rows(i0, ni), up = lt.up_proj.rows(i0, ni);
      const HostTensor down = tp.active() ? cols(lt.down_proj, i0, ni) : lt.down_proj;
      l.gate_up = linear({&gate, &up}, {});
      l.down = linear({&down}, {});
    }
    col_storage.clear();  // this layer's slices are uploaded
    layers_.push_back(std::move(l));
  }
  size_t dequantized = 0;
  for (const Layer& l : layers_)
    if (l.moe && l.moe->experts_dequantized()) dequantized += l.moe->expert_bytes();
  if (dequantized)
    log::info("FP8 experts dequantized to %s at load (weight-only FP8): %.2f GiB of expert weights",
              dtype_name(act).c_str(), double(dequantized) / double(1 << 30));
  if (c.quant.weight_only)  // the whole checkpoint: its linears run as float ones (fp8_linear.h)
    log::info("weight-only FP8 checkpoint (%s, %s): linear weights dequantized to %s at load, %.2f GiB of weights",
              quant_method_name(c.quant.method), c.quant.source.c_str(), dtype_name(act).c_str(),
              double(weight_bytes_) / double(1 << 30));
}

RopeStoreArgs LlamaModel::rope_args(int i, const ForwardBuffers& buf, const KvCacheView& kv, int n) const {
  const bool local = recipe_.layers[size_t(i)].local_rope && inv_freq_local_.defined();
  RopeStoreArgs r;
  r.n_heads = config_.n_heads;
  r.positions = buf.positions.rows(n);
  r.inv_freq = local ? inv_freq_local_.tensor() : inv_freq_.tensor();
  r.inv_freq_lo = local ? inv_freq_local_lo_.tensor() : inv_freq_lo_.tensor();
  if (!local && inv_freq_long_.defined()) {
    // LongRoPE per token: a token at a position >= original_max uses the long table.
    // transformers switches per forward, on the whole sequence's length: a prompt longer than
    // original_max gets the long table for all its tokens there. Per token gives identical
    // results for every sequence shorter than original_max and for decode past it (keys
    // already cached keep the table they were stored with, in both), and it keeps a cached
    // prefix valid whatever follows it; only a prompt that crosses original_max in one
    // forward differs (its tokens below original_max use the short table here).
    r.inv_freq_long = inv_freq_long_.tensor();
    r.inv_freq_long_lo = inv_freq_long_lo_.tensor();
    r.long_from = config_.rope_scaling.original_max_position_embeddings;
  }
  r.k_cache = kv.k[size_t(i)];
  r.v_cache = kv.v[size_t(i)];
  r.slots = buf.out_cache_loc.rows(n);
  r.kv_scales = recipe_.layers[size_t(i)].attention.kv_scales;
  return r;
}

void LlamaModel::pre_attention(int i, const ForwardBuffers& buf, const KvCacheView& kv, int n) const {
  const Layer& l = layers_[size_t(i)];
  const ModelConfig& c = config_;
  Tensor residual = buf.residual.rows(n);  // [n, hidden]
  if (i == 0) {
    if (config_.tp.active()) {
      // Vocabulary-parallel: the rank holding each id's row writes it, the others zeros; the
      // sum is the row itself, bit for bit.
      backend_.embedding_shard(residual, buf.input_ids.rows(n), embed_.tensor(), config_.tp.vocab_begin);
      backend_.all_reduce_sum(residual);
    } else {
      backend_.embedding(residual, buf.input_ids.rows(n), embed_.tensor());
    }
    if (recipe_.embed_scale != 0.f) backend_.scale(residual, recipe_.embed_scale);
  }
  Tensor qkv = buf.qkv.rows(n);  // [n, q_size + 2 * kv_size]
  const RopeStoreArgs r = rope_args(i, buf, kv, n);
  if (!c.qk_norm) {  // norm, qkv, RoPE and the KV store: one fused op (one kernel at batch 1 on CUDA)
    l.qkv.apply_rms_normed_rope_store(qkv, buf.normed.rows(n), residual, l.ln_in.tensor(), c.rms_norm_eps, r);
    return;
  }
  if (!l.qkv.is_fp8()) {  // norm, qkv, q/k norm, RoPE and the KV store: one op (one kernel at batch 1 on CUDA)
    backend_.rms_norm_qkv_qk_norm_rope_store(qkv, buf.normed.rows(n), residual, l.ln_in.tensor(), c.rms_norm_eps,
                                             l.qkv.weight(), l.qkv.bias(), l.q_norm.tensor(), l.k_norm.tensor(), r);
    return;
  }
  l.qkv.apply_rms_normed(qkv, buf.normed.rows(n), residual, l.ln_in.tensor(), c.rms_norm_eps);
  Tensor q = qkv.slice_cols(0, c.q_size()).unflatten_last(c.n_heads, c.head_dim);  // [n, heads, d]
  Tensor k = qkv.slice_cols(c.q_size(), c.kv_size()).unflatten_last(c.n_kv_heads, c.head_dim);
  Tensor v = qkv.slice_cols(c.q_size() + c.kv_size(), c.kv_size()).unflatten_last(c.n_kv_heads, c.head_dim);
  // Qwen3, Gemma 3: RMSNorm over each head's d values, in place, between the projection and RoPE;
  // then RoPE and the KV store (one kernel on CUDA for caches of the activation dtype).
  backend_.qk_norm_rope_store(q, k, v, l.q_norm.tensor(), l.k_norm.tensor(), c.rms_norm_eps, r.positions,
                              r.tables(), r.k_cache, r.v_cache, r.slots, r.kv_scales);
}

void LlamaModel::accumulate_row_parallel(const Linear& l, Tensor residual, Tensor x, const NextNorm& next) const {
  if (!config_.tp.active()) {  // TP 1: no collective, no copy
    if (next.linear != nullptr)
      return l.accumulate_before_norm(residual, x, next.norm_weight, config_.rms_norm_eps, *next.linear);
    return l.accumulate(residual, x);
  }
  // Every rank holds the same residual. Rank 0 adds its partial product to it, the others
  // overwrite it with theirs; the sum over ranks is then residual + the whole product.
  if (config_.tp.rank == 0)
    l.accumulate(residual, x);
  else
    l.apply(residual, x);
  backend_.all_reduce_sum(residual);
}

void LlamaModel::post_attention(int i, const ForwardBuffers& buf, int n) const {
  const Layer& l = layers_[size_t(i)];
  Tensor residual = buf.residual.rows(n), gate_up = buf.gate_up.rows(n), act = buf.act.rows(n);
  // A sparse layer: the recipe's activation is SiLU (MoeLayer's experts are SiLU-only; the
  // constructor checks it).
  if (l.moe) {
    accumulate_row_parallel(l.o_proj, residual, buf.attn_out.rows(n));  // residual += o_proj(attn)
    return l.moe->forward(buf, l.ln_post.tensor(), config_.rms_norm_eps, n);
  }
  // residual += o_proj(attn); the MLP's norm fusion of residual is the next op.
  accumulate_row_parallel(l.o_proj, residual, buf.attn_out.rows(n), {&l.gate_up, l.ln_post.tensor()});
  // down_proj is the next op on act and the only reader of it (accumulate_row_parallel applies
  // it first, then the collective): an FP8 backend may skip writing act.
  l.gate_up.apply_rms_normed_act(act, gate_up, buf.normed.rows(n), residual, l.ln_post.tensor(),
                                 config_.rms_norm_eps, recipe_.activation, &l.down);
  // residual += down_proj(act). run_piece runs the next layer's pre_attention right after this, whose
  // first op is its qkv's norm fusion of residual with ln_in.
  NextNorm next{};
  if (i + 1 < config_.n_layers) next = {&layers_[size_t(i + 1)].qkv, layers_[size_t(i + 1)].ln_in.tensor()};
  accumulate_row_parallel(l.down, residual, act, next);
}

// Gemma: each sublayer's output is normed before it joins the residual. `normed` holds the
// sublayer output in between (it is scratch at both points: the fused norm+gate_up op that
// follows reads the residual, not normed).
void LlamaModel::post_attention_sandwich(int i, const ForwardBuffers& buf, int n) const {
  const Layer& l = layers_[size_t(i)];
  Tensor residual = buf.residual.rows(n), normed = buf.normed.rows(n), gate_up = buf.gate_up.rows(n),
         act = buf.act.rows(n);
  // residual += norm(o_proj(attn)), normed = o_proj(attn)
  project_post_norm(l.o_proj, residual, normed, buf.attn_out.rows(n), l.ln_post.tensor());
  l.gate_up.apply_rms_normed_act(act, gate_up, normed, residual, l.ln_pre_ff.tensor(), config_.rms_norm_eps,
                                 recipe_.activation);
  project_post_norm(l.down, residual, normed, act, l.ln_post_ff.tensor());  // residual += norm(down_proj(act))
}

// out = proj(x); residual += rms_norm(out) * norm_weight. With TP the ranks' partial products are
// summed before the norm, so the two stay apart; at TP 1 they are one op (one kernel at batch 1
// on CUDA: Backend::linear_rms_norm_add).
void LlamaModel::project_post_norm(const Linear& proj, Tensor residual, Tensor out, Tensor x,
                                   Tensor norm_weight) const {
  const float eps = config_.rms_norm_eps;
  if (!config_.tp.active()) return proj.apply_rms_norm_add(residual, out, x, norm_weight, eps);
  proj.apply(out, x);
  backend_.all_reduce_sum(out);  // row-parallel: the ranks' partials summed
  backend_.rms_norm_add(residual, out, norm_weight, eps);
}

void LlamaModel::run_piece(int i, const ForwardBuffers& buf, const KvCacheView& kv, int n) const {
  SEAM_ASSERT(i >= 0 && i < n_pieces() && n > 0 && n <= buf.residual.size(0));
  if (i > 0) {
    if (recipe_.sandwich_norms)
      post_attention_sandwich(i - 1, buf, n);
    else
      post_attention(i - 1, buf, n);
  }
  if (i < config_.n_layers) pre_attention(i, buf, kv, n);
}

void LlamaModel::run_attention(int layer, const ForwardBuffers& buf, const KvCacheView& kv,
                               const AttentionBatch& b) const {
  const ModelConfig& c = config_;
  Tensor q = buf.qkv.rows(b.n_tokens).slice_cols(0, c.q_size()).unflatten_last(c.n_heads, c.head_dim);
  Tensor out = buf.attn_out.rows(b.n_tokens).view({b.n_tokens, c.n_heads, c.head_dim});
  backend_.attention(out, q, kv.k[size_t(layer)], kv.v[size_t(layer)], b, recipe_.layers[size_t(layer)].attention);
}

void LlamaModel::run_logits(const ForwardBuffers& buf, int n_seqs) const {
  // Only the last row of each sequence needs the final norm: gather first, then norm + lm_head.
  Tensor last = buf.last_hidden.rows(n_seqs);  // [n_seqs, hidden]
  backend_.gather_rows(last, buf.residual, buf.last_idx.rows(n_seqs));
  Tensor logits = buf.logits.rows(n_seqs);
  if (config_.tp.active()) {
    // Vocabulary-parallel head: the rank's slice of the logits, then every rank gathers the
    // slices side by side (each rank samples the same ids from the same full logits).
    Tensor shard = buf.logits_shard.rows(n_seqs);  // [n_seqs, vocab / tp]
    lm_head_.apply_rms_normed(shard, buf.normed.rows(n_seqs), last, norm_.tensor(), config_.rms_norm_eps);
    if (recipe_.final_logit_softcap != 0.f) backend_.softcap(shard, recipe_.final_logit_softcap);
    backend_.all_gather_cols(logits, shard, buf.logits_gather);
    return;
  }
  lm_head_.apply_rms_normed(logits, buf.normed.rows(n_seqs), last, norm_.tensor(), config_.rms_norm_eps);
  if (recipe_.final_logit_softcap != 0.f) backend_.softcap(logits, recipe_.final_logit_softcap);
}

}  // namespace seam
