// LlamaModel: the decoder forward pass of every supported family (Llama, Mistral, Qwen2/3,
// Phi-3, Gemma 2/3, and the mixture-of-experts Qwen2-MoE, Qwen3-MoE, Mixtral) on a backend;
// what a family does differently is its DecoderRecipe (decoder_recipe.h), its MoeConfig and
// its checkpoint's names (checkpoint.cpp). Written as a sequence of pieces separated by
// attention calls (the seams):
//
//   piece 0        : embed, norm+qkv+rope+store KV (Qwen3, Gemma 3: norm+qkv, then q/k norm+rope+store)
//   attention 0
//   piece i (1..L-1): o_proj+add, norm+gate_up+SiLU, down+add, norm+qkv+rope+store KV
//                                                  (layer i-1 post, layer i pre)
//   attention i      (the layer's scale, sliding window and logit soft-cap)
//   piece L        : o_proj+add, norm+gate_up+SiLU, down+add             (layer L-1 post)
//   logits         : gather the last rows, final norm+lm_head (+ final soft-cap)
//
// Gemma (recipe.sandwich_norms): piece 0 scales the embedding; o_proj and down write a
// scratch row that rms_norm_add normalises into the residual; GeGLU replaces SiLU.
//
// A mixture-of-experts layer (MoeConfig::is_sparse_layer) runs its MoeLayer in place of
// norm+gate_up+SiLU, down+add: router, top-k, experts and shared expert, all inside the piece.
//
// The residual stream is updated in place by the projections that feed it
// (linear_accumulate), and every RMSNorm is paired with the linear it feeds
// (rms_norm_qkv_rope_store, rms_norm_gate_up_silu, rms_norm_linear), so a backend can fuse
// them: CUDA's batch-1 GEMV does, and also applies RoPE, stores K/V and writes SiLU(gate) * up
// straight from its accumulators, and its decode attention merges its own splits: a decode layer
// is 5 kernels there (qkv, attention, o_proj, gate_up, down). With q/k norm (Qwen3, Gemma 3) the
// qkv GEMV only normalises and projects, and qk_norm_rope_store is one more kernel.
//
// Pieces contain no mode-dependent work: they act on every one of the n
// (possibly padded) rows alike, so EXTEND and MIXED batches of the same token
// count can replay the same captured piece. Attention is the only op that
// sees the real prefill/decode split.
#pragma once
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "model/checkpoint.h"
#include "model/decoder_recipe.h"
#include "model/device_weight.h"
#include "model/forward_buffers.h"
#include "model/kv_cache_view.h"
#include "model/linear.h"
#include "model/model_config.h"
#include "model/moe_layer.h"

namespace seam {

class LlamaModel {
 public:
  // Converts and uploads the checkpoint's weights to `backend` in dtype `act` (once): every
  // linear layer in the dense weight format of `act`. A config from shard_model_config
  // (model/tp_shard.h) loads only that rank's shard; its forward then calls the backend's
  // collectives (Backend::all_reduce_sum / all_gather_cols) after each row-parallel layer and
  // the vocabulary-parallel head.
  LlamaModel(Backend& backend, const ModelConfig& config, const Checkpoint& ckpt, DType act);
  LlamaModel(const LlamaModel&) = delete;
  LlamaModel& operator=(const LlamaModel&) = delete;

  const ModelConfig& config() const { return config_; }
  DType dtype() const { return act_; }
  size_t weight_bytes() const { return weight_bytes_; }
  int n_pieces() const { return config_.n_layers + 1; }
  // Layer i's mixture-of-experts feed-forward, or null for a dense layer, and its q/k/v
  // projection (tests read their weights and scales).
  const MoeLayer* layer_moe(int i) const { return layers_[size_t(i)].moe.get(); }
  const Linear& layer_qkv(int i) const { return layers_[size_t(i)].qkv; }

  // Runs piece `i` on the first n rows of the forward buffers.
  void run_piece(int i, const ForwardBuffers& buf, const KvCacheView& kv, int n) const;
  // Attention of layer `layer` on the real tokens: reads q from buf.qkv, writes buf.attn_out.
  void run_attention(int layer, const ForwardBuffers& buf, const KvCacheView& kv, const AttentionBatch& b) const;
  // logits[0..n_seqs) = lm_head(final hidden at last_idx), float32.
  void run_logits(const ForwardBuffers& buf, int n_seqs) const;

 private:
  struct Layer {
    DeviceWeight ln_in;    // [hidden]
    Linear qkv;            // [q_size + 2 * kv_size, hidden], bias with attention_bias
    DeviceWeight q_norm;   // [head_dim] or undefined
    DeviceWeight k_norm;   // [head_dim] or undefined
    Linear o_proj;         // [hidden, q_size], bias with o_proj_bias (attention_bias on Llama/Mistral/Qwen3)
    DeviceWeight ln_post;  // [hidden]  Llama: the MLP's pre-norm; Gemma: the attention output's norm
    DeviceWeight ln_pre_ff, ln_post_ff;  // [hidden]  Gemma only: the MLP's pre-norm and output norm
    Linear gate_up;        // [2 * inter, hidden]   (dense layers)
    Linear down;           // [hidden, inter]
    std::unique_ptr<MoeLayer> moe;  // sparse layers: the feed-forward instead of gate_up / down
  };

  // The norm fusion the caller runs right after a row-parallel accumulate: its norm weight and the
  // linear it feeds (Linear::accumulate_before_norm: an FP8 backend may make that norm's activations
  // in the product's epilogue). linear null: none named.
  struct NextNorm {  // no member initializers: `{}` (a null linear) is a default argument below
    const Linear* linear;
    Tensor norm_weight;
  };
  // residual += l(x) for a row-parallel layer (o_proj, down): with TP, the partial products
  // of every rank summed by an all-reduce. `next`: see NextNorm (used at TP 1 only).
  void accumulate_row_parallel(const Linear& l, Tensor residual, Tensor x, const NextNorm& next = {}) const;
  void pre_attention(int layer, const ForwardBuffers& buf, const KvCacheView& kv, int n) const;
  void post_attention(int layer, const ForwardBuffers& buf, int n) const;
  void post_attention_sandwich(int layer, const ForwardBuffers& buf, int n) const;
  // Gemma's output projection + post-norm: out = proj(x), residual += rms_norm(out) * norm_weight.
  void project_post_norm(const Linear& proj, Tensor residual, Tensor out, Tensor x, Tensor norm_weight) const;
  RopeStoreArgs rope_args(int layer, const ForwardBuffers& buf, const KvCacheView& kv, int n) const;

  Backend& backend_;
  ModelConfig config_;
  DecoderRecipe recipe_;
  DType act_;
  WeightFormat format_;    // of every linear layer
  DeviceWeight embed_;     // [vocab, hidden]
  DeviceWeight norm_;      // [hidden]
  Linear lm_head_;         // [vocab, hidden] (shares the embedding when tied)
  DeviceWeight inv_freq_;        // [rotary_dim / 2] f32, the full-attention layers' table
  DeviceWeight inv_freq_local_;  // the sliding layers' table (Gemma 3) or undefined (use inv_freq_)
  DeviceWeight inv_freq_long_;   // LongRoPE's long table or undefined
  // The lo halves of the three tables above (rope_angle.h: each double frequency is hi + lo).
  DeviceWeight inv_freq_lo_, inv_freq_local_lo_, inv_freq_long_lo_;
  std::vector<Layer> layers_;
  size_t weight_bytes_ = 0;
};

}  // namespace seam
