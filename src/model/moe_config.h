// MoeConfig: the mixture-of-experts part of a model's config.json (Qwen2-MoE, Qwen3-MoE,
// Mixtral), read by load_model_config for the architectures whose registry row names a
// MoeStyle. A dense model has n_experts == 0 and every layer's MLP is dense.
//
// The math of a sparse layer (transformers' Qwen2MoeSparseMoeBlock / Qwen3MoeSparseMoeBlock /
// MixtralSparseMoeBlock), x being the post-attention RMSNorm output:
//   logits = x @ W_router^T                      [n, n_experts], in the activation dtype
//   p = softmax(logits) in float32; the k largest p (ties: lower expert id first);
//   w = those p, divided by their sum when renormalize() (norm_topk_prob; Mixtral always)
//   out = sum_j w_j * down_j(silu(gate_j x) * up_j x)      over the k chosen experts
//   Qwen2-MoE: out += sigmoid(x @ w_shared_gate^T) * shared_expert(x) (a dense SiLU MLP)
// and the residual stream takes out.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace seam {

struct ModelConfig;

// How an architecture lays out and configures its experts (a registry row's rule).
enum class MoeStyle {
  none,     // dense MLP in every layer
  qwen2,    // Qwen2MoeForCausalLM: mlp.gate, mlp.experts.N.{gate,up,down}_proj, a shared expert
            // with its sigmoid gate; sparse layers by decoder_sparse_step / mlp_only_layers
  qwen3,    // Qwen3MoeForCausalLM: as qwen2 without the shared expert
  mixtral,  // MixtralForCausalLM: block_sparse_moe.gate, block_sparse_moe.experts.N.w1/w2/w3
            // (gate/down/up), every layer sparse, the chosen weights always renormalised
};

struct MoeConfig {
  MoeStyle style = MoeStyle::none;
  int n_experts = 0;                 // num_experts / num_local_experts; 0: dense model
  int n_experts_per_tok = 0;         // top-k
  int expert_intermediate_size = 0;  // moe_intermediate_size (Mixtral: intermediate_size)
  bool norm_topk_prob = false;       // Qwen: config.norm_topk_prob
  int decoder_sparse_step = 1;       // Qwen: layer i is sparse when (i + 1) % step == 0 ...
  std::vector<int> mlp_only_layers;  // ... and i is not listed here (those use intermediate_size)
  int shared_expert_intermediate_size = 0;  // Qwen2-MoE's shared expert; 0: none

  bool enabled() const { return n_experts > 0; }
  // The chosen weights are divided by their sum (Mixtral always; Qwen with norm_topk_prob).
  bool renormalize() const { return style == MoeStyle::mixtral || norm_topk_prob; }
  bool has_shared_expert() const { return shared_expert_intermediate_size > 0; }
  // Whether layer `i` has the sparse MoE block (else the dense MLP of intermediate_size).
  bool is_sparse_layer(int i) const;
  bool any_dense_layer(int n_layers) const;
};

// Reads the MoE fields of config.json for `style` into c.moe (c's dense fields already read).
// A field that would change the model and that seam does not honour is a seam::Error naming
// it; training-only fields (output_router_logits, router_aux_loss_coef, router_jitter_noise)
// are ignored. style none: nothing is read.
void read_moe_config(const nlohmann::json& j, MoeStyle style, ModelConfig& c);

const char* moe_style_name(MoeStyle s);

// Columns of the forward's act buffer (gate_up: twice that): the widest dense SiLU MLP the
// model runs, the dense layers' intermediate_size and Qwen2-MoE's shared expert (at least 1).
int mlp_buffer_width(const ModelConfig& c);

}  // namespace seam
