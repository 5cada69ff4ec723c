#include "backend/cuda/moe_gathered_gemv.h"

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/gemv_experts.h"
#include "backend/cuda/moe_combine.h"

namespace seam::cuda {

namespace {

// scratch.expert_out's memory as the float32 [n_slots, hidden] expert outputs.
Tensor expert_out_f32(const MoeScratch& s, int64_t n_slots, int64_t hidden) {
  return Tensor(s.expert_out.data, DType::f32, s.expert_out.device, {n_slots, hidden});
}

}  // namespace

bool moe_gathered_gemv_applies(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                               const Tensor& topk_ids, const MoeScratch& s) {
  if (x.dtype != DType::f16 && x.dtype != DType::bf16) return false;
  const int64_t inter = w_gate_up.size(1) / 2, hidden = w_gate_up.size(2), n_slots = x.size(0) * topk_ids.size(1);
  if (n_slots < 1 || inter % 8 != 0 || hidden % 8 != 0 || !s.act.defined() || s.act.ndim != 2 ||
      s.act.size(0) < n_slots || !s.expert_out.defined() ||
      !s.expert_out.contiguous() || !aligned16(s.expert_out.data) ||
      s.expert_out.numel() * int64_t(dtype_size(s.expert_out.dtype)) < n_slots * hidden * int64_t(sizeof(float)))
    return false;
  const Tensor act = s.act.rows(n_slots);
  return gemv_experts_applies(act, x, false, w_gate_up, topk_ids, true) &&
         gemv_experts_applies(expert_out_f32(s, n_slots, hidden), act, true, w_down, topk_ids, false);
}

void launch_moe_gathered_gemv(const Tensor& out, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                              const Tensor& topk_ids, const Tensor& topk_weights, const MoeScratch& scratch,
                              cudaStream_t stream, const MoeTickets& tickets) {
  SEAM_ASSERT(moe_gathered_gemv_applies(x, w_gate_up, w_down, topk_ids, scratch));
  const int64_t n_slots = x.size(0) * topk_ids.size(1), hidden = w_gate_up.size(2);
  const Tensor act = scratch.act.rows(n_slots), y = expert_out_f32(scratch, n_slots, hidden);
  launch_gemv_experts(act, x, false, w_gate_up, topk_ids, true, stream);
  const GemvExpertsCombine combine{out, topk_weights, tickets.counters, tickets.n};
  // Tickets given (the backend gives them under SEAM_MOE_FUSED_COMBINE=1): try the fold.
  const bool try_fold = tickets.counters != nullptr;
  // Unfolded (or where the fold does not apply: the down launch then wrote the plain products),
  // the combine runs apart.
  if (!launch_gemv_experts(y, act, true, w_down, topk_ids, false, stream, try_fold ? &combine : nullptr))
    launch_moe_combine(out, y, topk_weights, stream);
}

}  // namespace seam::cuda
