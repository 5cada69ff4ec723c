// MoeBuffers: the fixed-address scratch of the mixture-of-experts layers, part of the
// ForwardBuffers (StepBuffers allocates them when the model has experts; undefined for a
// dense model). Rows: max_tokens, like every per-token buffer; graphs bake the addresses.
#pragma once
#include "core/tensor.h"

namespace seam {

struct MoeBuffers {
  Tensor router_logits;  // [max_tokens, n_experts]   activation dtype (the router linear's output)
  Tensor topk_ids;       // [max_tokens, k] i32        moe_route's chosen experts
  Tensor topk_weights;   // [max_tokens, k] f32        and their weights
  // moe_experts' scratch (MoeScratch): silu(gate) * up, each (token, expert)'s output, the grouping
  Tensor expert_act;     // [max_tokens * k, expert_inter]
  Tensor expert_out;     // [max_tokens * k, hidden]
  Tensor expert_index;   // [2 * n_experts + 2 + max_tokens * k] i32
  Tensor shared_gate;    // [max_tokens, 1]            Qwen2-MoE: shared_expert_gate's logit
  Tensor shared_out;     // [max_tokens, hidden]       Qwen2-MoE: the shared expert's output
};

}  // namespace seam
