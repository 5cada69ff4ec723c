// ModelConfig: what seam reads from a Hugging Face model folder's config.json
// and generation_config.json, validated, with derived values filled in.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "model/quant_config.h"

namespace seam {

// Llama covers Llama 2/3/3.x, Mistral and TinyLlama; Qwen2 adds a qkv bias;
// Qwen3 adds per-head RMSNorm on q and k.
enum class ModelFamily { llama, qwen2, qwen3 };

struct RopeScaling {
  bool llama3 = false;  // rope_scaling.rope_type == "llama3"
  float factor = 1.f;
  float low_freq_factor = 1.f;
  float high_freq_factor = 4.f;
  int original_max_position_embeddings = 8192;
};

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
  float rope_theta = 10000.f;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v projections have a bias (Qwen2, or attention_bias: true)
  bool qk_norm = false;         // Qwen3
  bool o_proj_bias = false;     // o_proj has a bias too (attention_bias: true on Llama/Mistral/Qwen3; never Qwen2)
  DType torch_dtype = DType::f32;  // the checkpoint's declared dtype ("auto" resolves to this)
  QuantConfig quant;               // quantization_config / hf_quant_config.json / --quantization

  // generation_config.json (falls back to config.json's eos/bos ids)
  std::vector<int32_t> eos_token_ids;
  int32_t bos_token_id = -1;

  int q_size() const { return n_heads * head_dim; }
  int kv_size() const { return n_kv_heads * head_dim; }
};

// Reads and validates `dir/config.json` and `dir/generation_config.json` (optional).
// Throws seam::Error with a one-line message naming the file and the problem.
ModelConfig load_model_config(const std::string& dir);

// The inverse frequencies of rotary embedding, [head_dim / 2], llama3 scaling applied.
std::vector<float> rope_inv_freq(const ModelConfig& c);

}  // namespace seam
