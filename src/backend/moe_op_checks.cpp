#include "backend/moe_op_checks.h"

#include <string>

#include "backend/op_check_helpers.h"

namespace seam::op_checks {

using namespace detail;

namespace {

// The routing outputs of n rows: ids [n, k] i32 and weights [n, k] f32, both contiguous.
void routing(const Tensor& topk_ids, const Tensor& topk_weights, Device dev, const char* op) {
  const std::string ids = std::string(op) + " topk_ids", weights = std::string(op) + " topk_weights";
  same(topk_ids, DType::i32, dev, ids.c_str());
  same(topk_weights, DType::f32, dev, weights.c_str());
  SEAM_CHECK(topk_ids.ndim == 2 && topk_ids.contiguous() && topk_ids.size(1) > 0, ids,
             ": expected [n, k] contiguous with k > 0, got ", topk_ids.shape_str());
  check_shape(topk_weights, {topk_ids.size(0), topk_ids.size(1)}, weights.c_str());
  SEAM_CHECK(topk_weights.contiguous(), weights, ": must be contiguous");
}

}  // namespace

void moe_route(const Tensor& topk_ids, const Tensor& topk_weights, const Tensor& router_logits, Device dev) {
  floating(router_logits, dev, "moe_route router_logits");
  rows(router_logits, "moe_route router_logits");
  routing(topk_ids, topk_weights, dev, "moe_route");
  SEAM_CHECK(topk_ids.size(0) == router_logits.size(0), "moe_route: topk_ids has ", topk_ids.size(0),
             " rows, router_logits ", router_logits.size(0));
  SEAM_CHECK(topk_ids.size(1) <= router_logits.size(1), "moe_route: k = ", topk_ids.size(1), " is more than the ",
             router_logits.size(1), " experts");
}

void moe_experts(const Tensor& out, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                 const Tensor& topk_ids, const Tensor& topk_weights, const MoeScratch& scratch, Device dev) {
  floating(x, dev, "moe_experts x");
  same(out, x.dtype, dev, "moe_experts out");
  same(w_gate_up, x.dtype, dev, "moe_experts w_gate_up");
  same(w_down, x.dtype, dev, "moe_experts w_down");
  rows(x, "moe_experts x");
  rows(out, "moe_experts out");
  SEAM_CHECK(w_gate_up.ndim == 3 && w_gate_up.contiguous() && w_gate_up.size(1) % 2 == 0, "moe_experts w_gate_up: ",
             "expected [n_experts, 2 * inter, hidden] contiguous, got ", w_gate_up.shape_str());
  const int64_t n_experts = w_gate_up.size(0), inter = w_gate_up.size(1) / 2, hidden = w_gate_up.size(2);
  check_shape(x, {-1, hidden}, "moe_experts x");
  check_shape(out, {x.size(0), hidden}, "moe_experts out");
  check_shape(w_down, {n_experts, hidden, inter}, "moe_experts w_down");
  SEAM_CHECK(w_down.contiguous(), "moe_experts w_down: must be contiguous");
  SEAM_CHECK(!overlap(out, x), "moe_experts: out overlaps x");
  routing(topk_ids, topk_weights, dev, "moe_experts");
  SEAM_CHECK(topk_ids.size(0) == x.size(0), "moe_experts: topk_ids has ", topk_ids.size(0), " rows, x ", x.size(0));
  SEAM_CHECK(topk_ids.size(1) <= n_experts, "moe_experts: k = ", topk_ids.size(1), " is more than the ", n_experts,
             " experts");
  const int64_t n_slots = x.size(0) * topk_ids.size(1);
  const Tensor& act = scratch.act;
  same(act, x.dtype, dev, "moe_experts act");
  rows(act, "moe_experts act");
  SEAM_CHECK(act.size(0) >= n_slots && act.size(1) == inter, "moe_experts act: expected [>= ", n_slots, ", ", inter,
             "], got ", act.shape_str());
  SEAM_CHECK(!overlap(act, out) && !overlap(act, x), "moe_experts: act overlaps out or x");
  if (const Tensor& y = scratch.expert_out; y.defined()) {
    same(y, x.dtype, dev, "moe_experts expert_out");
    SEAM_CHECK(y.ndim == 2 && y.contiguous() && y.size(0) >= n_slots && y.size(1) == hidden,
               "moe_experts expert_out: expected [>= ", n_slots, ", ", hidden, "] contiguous, got ", y.shape_str());
    SEAM_CHECK(!overlap(y, out) && !overlap(y, x) && !overlap(y, act), "moe_experts: expert_out overlaps another argument");
  }
  if (const Tensor& idx = scratch.index; idx.defined()) {
    same(idx, DType::i32, dev, "moe_experts index");
    SEAM_CHECK(idx.ndim == 1 && idx.contiguous() && idx.size(0) >= 2 * n_experts + 2 + n_slots,
               "moe_experts index: expected [>= ", 2 * n_experts + 2 + n_slots, "] i32, got ", idx.shape_str());
  }
}

void moe_shared_expert_add(const Tensor& out, const Tensor& y, const Tensor& gate, Device dev) {
  floating(y, dev, "moe_shared_expert_add y");
  same(out, y.dtype, dev, "moe_shared_expert_add out");
  same(gate, y.dtype, dev, "moe_shared_expert_add gate");
  rows(y, "moe_shared_expert_add y");
  rows(out, "moe_shared_expert_add out");
  check_shape(out, {y.size(0), y.size(1)}, "moe_shared_expert_add out");
  check_shape(gate, {y.size(0), 1}, "moe_shared_expert_add gate");
  SEAM_CHECK(!overlap(out, y), "moe_shared_expert_add: out overlaps y");
}

}  // namespace seam::op_checks
