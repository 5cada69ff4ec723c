#include "model/model_registry.h"

#include "core/error.h"
#include "model/llama_model.h"

namespace seam {

namespace {

// Every family shares one decoder forward (llama_model.h); the config fields the rules above
// set (attention_bias, o_proj_bias, qk_norm, gemma_norms, windows, soft-caps...) select its
// options, and the checkpoint's family-specific tensor names are resolved at open.
std::unique_ptr<LlamaModel> create_llama(Backend& backend, const ModelConfig& config, const Checkpoint& ckpt,
                                         DType act) {
  return std::make_unique<LlamaModel>(backend, config, ckpt, act);
}

}  // namespace

const std::vector<ModelDefinition>& model_definitions() {
  static const std::vector<ModelDefinition> definitions = {
      {"LlamaForCausalLM", ModelFamily::llama, AttentionBiasRule::from_config, false, SlidingWindowRule::none,
       false, create_llama},
      {"MistralForCausalLM", ModelFamily::llama, AttentionBiasRule::from_config, false, SlidingWindowRule::always,
       false, create_llama},
      {"Qwen2ForCausalLM", ModelFamily::qwen2, AttentionBiasRule::qkv_always, false, SlidingWindowRule::opt_in,
       false, create_llama},
      {"Qwen3ForCausalLM", ModelFamily::qwen3, AttentionBiasRule::from_config, true, SlidingWindowRule::opt_in,
       false, create_llama},
      {"Gemma2ForCausalLM", ModelFamily::gemma2, AttentionBiasRule::from_config, false,
       SlidingWindowRule::alternating, false, create_llama},
      {"Gemma3ForCausalLM", ModelFamily::gemma3, AttentionBiasRule::from_config, true, SlidingWindowRule::pattern,
       false, create_llama},
      {"Gemma3ForConditionalGeneration", ModelFamily::gemma3, AttentionBiasRule::from_config, true,
       SlidingWindowRule::pattern, true, create_llama},
      {"Phi3ForCausalLM", ModelFamily::phi3, AttentionBiasRule::from_config, false, SlidingWindowRule::always, false,
       create_llama},
      // Mixture of experts: the same forward with a sparse feed-forward (MoeLayer) in place of
      // the dense MLP in the layers MoeConfig names. Attention is the dense sibling's: Qwen2/3-MoE
      // take Qwen's opt-in window (use_sliding_window, max_window_layers); Mixtral takes
      // Mistral's rule (MixtralConfig's sliding_window, when non-null, on every layer).
      {"Qwen2MoeForCausalLM", ModelFamily::qwen2, AttentionBiasRule::qkv_from_qkv_bias, false,
       SlidingWindowRule::opt_in, false, create_llama, MoeStyle::qwen2},
      {"Qwen3MoeForCausalLM", ModelFamily::qwen3, AttentionBiasRule::from_config, true, SlidingWindowRule::opt_in,
       false, create_llama, MoeStyle::qwen3},
      {"MixtralForCausalLM", ModelFamily::llama, AttentionBiasRule::from_config, false, SlidingWindowRule::always,
       false, create_llama, MoeStyle::mixtral},
  };
  return definitions;
}

const ModelDefinition* find_model_definition(const std::string& architecture) {
  for (const ModelDefinition& d : model_definitions())
    if (architecture == d.architecture) return &d;
  return nullptr;
}

std::string supported_architectures() {
  std::string out;
  for (const ModelDefinition& d : model_definitions()) out += (out.empty() ? "" : ", ") + std::string(d.architecture);
  return out;
}

std::unique_ptr<LlamaModel> create_model(Backend& backend, const ModelConfig& config, const Checkpoint& ckpt,
                                         DType act) {
  const ModelDefinition* d = find_model_definition(config.architecture);
  SEAM_CHECK(d, "unknown architecture '", config.architecture, "' (supported: ", supported_architectures(), ")");
  return d->create(backend, config, ckpt, act);
}

}  // namespace seam
