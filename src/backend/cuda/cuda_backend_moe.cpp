// CudaBackend's mixture-of-experts ops: the boundary checks (backend/moe_op_checks.h), then the
// launchers. Launch sizes depend on the host-baked row count only; the routing is read from
// device memory by the kernels, so the whole layer is captured in decode and piecewise graphs.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/diagnostic_switch.h"
#include "backend/cuda/gemv.h"
#include "backend/cuda/moe_experts.h"
#include "backend/cuda/moe_route.h"
#include "backend/cuda/moe_shared_expert_add.h"
#include "backend/moe_op_checks.h"
#include "backend/op_checks.h"
#include "core/dtype.h"

namespace seam::cuda {

namespace {

// SEAM_DEBUG_MOE_ROUTE=r (a diagnostic): after each eager routing of a batch with a row r, row r's
// router logits in descending order with the gaps between neighbours go to stderr, so a bf16
// routing near-tie (the k-th and (k+1)-th logits within a rounding) can be told from a kernel
// fault. Steps under graph capture are skipped (the copy synchronises the stream): run eagerly.
void debug_route_row(const Tensor& router_logits, int64_t k, cudaStream_t stream) {
  static const int row = env_int("SEAM_DEBUG_MOE_ROUTE", -1, -1, INT32_MAX);
  static int call = 0;
  if (row < 0 || row >= router_logits.size(0)) return;
  const int64_t E = router_logits.size(1);
  std::vector<uint8_t> raw(size_t(E) * dtype_size(router_logits.dtype));
  const auto* src = static_cast<const uint8_t*>(router_logits.data) +
                    row * router_logits.stride[0] * int64_t(dtype_size(router_logits.dtype));
  SEAM_CUDA_CHECK(cudaMemcpyAsync(raw.data(), src, raw.size(), cudaMemcpyDeviceToHost, stream));
  SEAM_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<float> v(static_cast<size_t>(E));
  convert_to_f32(raw.data(), router_logits.dtype, v.data(), v.size());
  std::vector<int> order(static_cast<size_t>(E));
  for (int e = 0; e < int(E); ++e) order[size_t(e)] = e;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return v[size_t(a)] > v[size_t(b)]; });
  std::string line = "moe_route call " + std::to_string(call++) + " row " + std::to_string(row) + " of " +
                     std::to_string(router_logits.size(0)) + " (" + dtype_name(router_logits.dtype) + "):";
  char buf[64];
  for (int64_t i = 0; i < std::min<int64_t>(E, k + 2); ++i) {
    const float x = v[size_t(order[size_t(i)])];
    std::snprintf(buf, sizeof(buf), " e%d=%.6g", order[size_t(i)], x);
    line += buf;
    if (i + 1 == k && i + 1 < E) {
      std::snprintf(buf, sizeof(buf), " | gap %.3g |", x - v[size_t(order[size_t(i + 1)])]);
      line += buf;
    }
  }
  std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace

void CudaBackend::moe_route(Tensor topk_ids, Tensor topk_weights, Tensor router_logits, bool renormalize) {
  op_checks::moe_route(topk_ids, topk_weights, router_logits, Device::cuda);
  launch_moe_route(topk_ids, topk_weights, router_logits, renormalize, stream_);
  if (!capturing_) debug_route_row(router_logits, topk_ids.size(1), stream_);
}

// The router GEMV with the routing in its last block (GemvFusion::route added to f: its input
// norm, if any, is the caller's) when SEAM_MOE_FUSED_ROUTE is on and the GEMV takes it; false:
// nothing was launched.
bool CudaBackend::fused_route(GemvFusion f, Tensor topk_ids, Tensor topk_weights, Tensor router_logits, Tensor x,
                              Tensor w_router, bool renormalize) {
  f.route.topk_ids = topk_ids;
  f.route.topk_weights = topk_weights;
  f.route.renormalize = renormalize;
  f.route.counter = post_norm_counters_ + next_post_norm_counter_;
  if (!fused_moe_route_ || !gemv_fusion_applies(router_logits, x, w_router, Tensor(), f)) return false;
  next_post_norm_counter_ = (next_post_norm_counter_ + 1) % kPostNormCounters;
  launch_gemv(router_logits, x, w_router, Tensor(), f, stream_);
  if (!capturing_) debug_route_row(router_logits, topk_ids.size(1), stream_);
  return true;
}

void CudaBackend::moe_router_route(Tensor topk_ids, Tensor topk_weights, Tensor router_logits, Tensor x,
                                   Tensor w_router, bool renormalize) {
  op_checks::linear(router_logits, x, w_router, Tensor(), Device::cuda);
  op_checks::moe_route(topk_ids, topk_weights, router_logits, Device::cuda);
  // One row: the router GEMV's last block routes (GemvFusion::route); the moe_route launch drops
  // out and the ids, weights and logits are those of linear + moe_route, bit for bit.
  if (fused_route(GemvFusion{}, topk_ids, topk_weights, router_logits, x, w_router, renormalize)) return;
  Backend::moe_router_route(topk_ids, topk_weights, router_logits, x, w_router, renormalize);
}

void CudaBackend::moe_norm_router_route(Tensor topk_ids, Tensor topk_weights, Tensor router_logits, Tensor normed,
                                        Tensor x, Tensor norm_weight, float eps, Tensor w_router, bool renormalize) {
  op_checks::rms_norm(normed, x, norm_weight, Device::cuda);
  op_checks::linear(router_logits, normed, w_router, Tensor(), Device::cuda);
  op_checks::moe_route(topk_ids, topk_weights, router_logits, Device::cuda);
  // One row: the router GEMV of moe_router_route also normalises x exactly as rms_norm (every
  // block stages normed, block 0 writes it: GemvFusion::normed_out); the rms_norm launch drops
  // out and normed, the logits, ids and weights are those of the three ops, bit for bit.
  GemvFusion f;
  f.norm_weight = norm_weight;
  f.eps = eps;
  f.normed_out = normed;
  if (fused_route(f, topk_ids, topk_weights, router_logits, x, w_router, renormalize)) return;
  Backend::moe_norm_router_route(topk_ids, topk_weights, router_logits, normed, x, norm_weight, eps, w_router,
                                 renormalize);
}

void CudaBackend::moe_experts(Tensor out, Tensor x, Tensor w_gate_up, Tensor w_down, Tensor topk_ids,
                              Tensor topk_weights, const MoeScratch& scratch) {
  op_checks::moe_experts(out, x, w_gate_up, w_down, topk_ids, topk_weights, scratch, Device::cuda);
  // The tickets let one row's gathered_gemv path fold its combine into the down GEMV
  // (SEAM_MOE_FUSED_COMBINE=1; off by default, measured slower: none, the combine runs as its own
  // kernel).
  MoeTickets tickets;
  if (fused_moe_combine_) {
    tickets = MoeTickets{moe_tickets_ + next_moe_tickets_ * kMoeTickets, kMoeTickets};
    next_moe_tickets_ ^= 1;
  }
  launch_moe_experts(out, x, w_gate_up, w_down, topk_ids, topk_weights, scratch, stream_, tickets);
}

void CudaBackend::moe_shared_expert_add(Tensor out, Tensor y, Tensor gate) {
  op_checks::moe_shared_expert_add(out, y, gate, Device::cuda);
  launch_moe_shared_expert_add(out, y, gate, stream_);
}

}  // namespace seam::cuda
