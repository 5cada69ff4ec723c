// ModelConfig: what seam reads from a Hugging Face model folder's config.json
// and generation_config.json, validated, with derived values filled in.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "model/quant_config.h"
#include "model/moe_config.h"
#include "model/rope_config.h"
#include "model/tp_shard.h"

namespace seam {

// Llama covers Llama 2/3/3.x, Mistral and TinyLlama; Qwen2 adds a qkv bias;
// Qwen3 adds per-head RMSNorm on q and k. Gemma 2/3 add the "sandwich" norms around
// both sublayers, GeGLU, the scaled embedding and (1 + w) norms; Gemma 3 q/k norms.
// Phi-3 is Llama's forward with fused q/k/v and gate/up tensors and LongRoPE.
enum class ModelFamily { llama, qwen2, qwen3, gemma2, gemma3, phi3 };

enum class MlpActivation { silu, gelu_tanh };  // SiLU(gate) * up, or GELU-tanh(gate) * up (GeGLU)

struct ModelConfig {
  std::string architecture;  // e.g. "LlamaForCausalLM"
  ModelFamily family = ModelFamily::llama;
  int hidden_size = 0;
  int intermediate_size = 0;
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;  // config.head_dim, else hidden_size / n_heads
  int vocab_size = 0;
  int max_position_embeddings = 0;
  float rms_norm_eps = 1e-6f;
  // RoPE of the full-attention layers (every layer but Gemma 3's sliding ones).
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  // RoPE of the sliding-window layers: Gemma 3's rope_local_base_freq, unscaled; equal to the
  // above for every other family.
  RopeConfig rope_local;
  int rotary_dim = 0;  // head_dim * partial_rotary_factor (Phi-4-mini: 0.75); the rest passes through
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v projections have a bias (Qwen2, or attention_bias: true)
  bool qk_norm = false;         // Qwen3, Gemma 3
  bool o_proj_bias = false;     // o_proj has a bias too (attention_bias: true on Llama/Mistral/Qwen3; never Qwen2)
  DType torch_dtype = DType::f32;  // the checkpoint's declared dtype ("auto" resolves to this)
  QuantConfig quant;               // quantization_config / hf_quant_config.json / --quantization
  MoeConfig moe;                   // mixture-of-experts layers (Qwen2/3-MoE, Mixtral); disabled: dense

  // Attention: per layer, the sliding window (a query at position p sees keys j > p - window)
  // or 0 for full attention; empty means full attention everywhere.
  int sliding_window = 0;
  std::vector<int> layer_windows;  // [n_layers] when any layer slides
  // The layer types ("sliding_attention") whether or not a window is set: Gemma 3 picks the
  // local RoPE table by type. Empty when no layer is of the sliding type.
  std::vector<bool> sliding_layers;
  float query_pre_attn_scalar = 0.f;  // Gemma: the attention scale is its ^-0.5 (0: head_dim^-0.5)
  float attn_logit_softcap = 0.f;     // Gemma 2: scores = cap * tanh(scores / cap); 0 = off
  float final_logit_softcap = 0.f;    // Gemma 2: logits = cap * tanh(logits / cap); 0 = off
  MlpActivation hidden_act = MlpActivation::silu;
  bool gemma_norms = false;  // Gemma: RMSNorm weights are (1 + w), sandwich norms, embedding * sqrt(hidden)
  // The text model of a multimodal checkpoint (Gemma3ForConditionalGeneration): the fields come
  // from config.json's text_config, the tensors from language_model.* / model.language_model.*.
  bool text_of_multimodal = false;

  // Tensor parallelism: the rank's share (model/tp_shard.h); size 1 for the whole model.
  // After shard_model_config, n_heads, n_kv_heads and the intermediate sizes are the rank's.
  TpShard tp;

  // generation_config.json (falls back to config.json's eos/bos ids)
  std::vector<int32_t> eos_token_ids;
  int32_t bos_token_id = -1;

  int q_size() const { return n_heads * head_dim; }
  int kv_size() const { return n_kv_heads * head_dim; }
  int window(int layer) const { return layer_windows.empty() ? 0 : layer_windows[size_t(layer)]; }
  bool sliding_layer(int layer) const { return !sliding_layers.empty() && sliding_layers[size_t(layer)]; }
  RopeConfig rope_global() const { return {rope_theta, rope_scaling}; }
};

// Reads and validates `dir/config.json` and `dir/generation_config.json` (optional).
// Throws seam::Error with a one-line message naming the file and the problem.
ModelConfig load_model_config(const std::string& dir);

// The inverse frequencies of rotary embedding of the full-attention layers, [rotary_dim / 2],
// scaling applied (LongRoPE: its short table).
std::vector<float> rope_inv_freq(const ModelConfig& c);

}  // namespace seam
