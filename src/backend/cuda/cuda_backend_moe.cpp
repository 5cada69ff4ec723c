// CudaBackend's mixture-of-experts ops: the boundary checks (backend/moe_op_checks.h), then the
// launchers. Launch sizes depend on the host-baked row count only; the routing is read from
// device memory by the kernels, so the whole layer is captured in decode and piecewise graphs.
#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/moe_experts.h"
#include "backend/cuda/moe_route.h"
#include "backend/cuda/moe_shared_expert_add.h"
#include "backend/moe_op_checks.h"

namespace seam::cuda {

void CudaBackend::moe_route(Tensor topk_ids, Tensor topk_weights, Tensor router_logits, bool renormalize) {
  op_checks::moe_route(topk_ids, topk_weights, router_logits, Device::cuda);
  launch_moe_route(topk_ids, topk_weights, router_logits, renormalize, stream_);
}

void CudaBackend::moe_experts(Tensor out, Tensor x, Tensor w_gate_up, Tensor w_down, Tensor topk_ids,
                              Tensor topk_weights, const MoeScratch& scratch) {
  op_checks::moe_experts(out, x, w_gate_up, w_down, topk_ids, topk_weights, scratch, Device::cuda);
  launch_moe_experts(out, x, w_gate_up, w_down, topk_ids, topk_weights, scratch, stream_);
}

void CudaBackend::moe_shared_expert_add(Tensor out, Tensor y, Tensor gate) {
  op_checks::moe_shared_expert_add(out, y, gate, Device::cuda);
  launch_moe_shared_expert_add(out, y, gate, stream_);
}

}  // namespace seam::cuda
