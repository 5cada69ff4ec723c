// The model registry: config.json's `architectures[0]` -> the definition of the model that
// computes it: its family, the family's rules for reading config.json, and the factory of
// its forward. Families are data here, not forks: a new architecture that shares a
// family's forward is one row in model_registry.cpp; a new family adds its forward class
// and a row. Anything not listed is rejected with the supported list (never guessed).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "model/model_config.h"

namespace seam {

class Backend;
class Checkpoint;
class LlamaModel;

// Where the attention projections' biases come from.
enum class AttentionBiasRule {
  from_config,  // config.json attention_bias puts a bias on q, k, v and o_proj (Llama/Mistral/Qwen3)
  qkv_always,   // q, k and v always have a bias and o_proj never; no config key (Qwen2)
  qkv_from_qkv_bias,  // q, k and v have a bias when config.json qkv_bias (default true); o_proj never (Qwen2-MoE)
};

// Which layers attend within config.json's `sliding_window` (and which key turns it on).
enum class SlidingWindowRule {
  none,         // the family has no window; transformers ignores the key, so does seam (Llama)
  always,       // every layer whenever `sliding_window` is given (Mistral, Phi-3)
  opt_in,       // only with use_sliding_window: true; layer_types, else layers >= max_window_layers (Qwen2/3)
  alternating,  // layer_types, else every other layer from layer 0 (Gemma 2)
  pattern,      // layer_types, else every sliding_window_pattern-th layer is global (Gemma 3)
};

struct ModelDefinition {
  const char* architecture;  // as in config.json "architectures"
  ModelFamily family;
  AttentionBiasRule attention_bias;
  bool qk_norm;                // per-head RMSNorm on q and k between the projection and RoPE (Qwen3, Gemma 3)
  SlidingWindowRule sliding_window;
  bool text_config_nested;  // the text model's fields are in config.json's text_config (a multimodal checkpoint)
  // Builds the forward on `backend`, converting and uploading the weights once in `act`.
  std::unique_ptr<LlamaModel> (*create)(Backend& backend, const ModelConfig& config, const Checkpoint& ckpt,
                                        DType act);
  MoeStyle moe = MoeStyle::none;  // mixture-of-experts layers and their config keys (moe_config.h)
};

// Every registered definition, in the order error messages list them.
const std::vector<ModelDefinition>& model_definitions();
// The definition of `architecture`, or nullptr when it is not registered.
const ModelDefinition* find_model_definition(const std::string& architecture);
// "LlamaForCausalLM, MistralForCausalLM, ..." for error messages.
std::string supported_architectures();
// The forward of config.architecture (load_model_config filled it); an architecture
// missing from the registry is a seam::Error naming it and the supported ones.
std::unique_ptr<LlamaModel> create_model(Backend& backend, const ModelConfig& config, const Checkpoint& ckpt,
                                         DType act);

}  // namespace seam
