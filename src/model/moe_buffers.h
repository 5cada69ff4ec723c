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
  Tensor expert_act;     // [max_tokens * k, expert_inter]   moe_experts' scratch: silu(gate) * up
  Tensor shared_gate;    // [max_tokens, 1]            Qwen2-MoE: shared_expert_gate's logit
  Tensor shared_out;     // [max_tokens, hidden]       Qwen2-MoE: the shared expert's output
};

}  // namespace seam
