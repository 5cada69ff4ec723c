// The boundary checks of the mixture-of-experts Backend ops (backend.h, "mixture of
// experts"), shared by every backend as op_checks.h is for the others: devices, dtypes,
// shapes and overlaps, each failure a seam::Error naming the op and the argument.
#pragma once
#include "backend/backend.h"

namespace seam::op_checks {

void moe_route(const Tensor& topk_ids, const Tensor& topk_weights, const Tensor& router_logits, Device dev);
void moe_experts(const Tensor& out, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                 const Tensor& topk_ids, const Tensor& topk_weights, const MoeScratch& scratch, Device dev);
void moe_shared_expert_add(const Tensor& out, const Tensor& y, const Tensor& gate, Device dev);

}  // namespace seam::op_checks
