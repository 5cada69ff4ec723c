// The mixture-of-experts feed-forward: the chosen experts' SiLU MLPs, weighted and summed.
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"
#include "core/tensor.h"

namespace seam::cuda {
// Backend::moe_experts. Small batches (and float32): gathered GEMVs (llama.cpp's mul_mat_id
// manner): each (token, chosen expert) pair reads only its expert's rows. Two kernels:
// act[i*k+j] = silu(gate_e x_i) * up_e x_i; then out[i] += sum_j w_ij down_e act[i*k+j] (j in
// order, float32, added once). Large 16-bit batches with the grouping scratch: the grouped path
// (moe_experts_grouped.h). Either way the ids are read from device memory and the launch sizes
// depend on n alone, so a graph replays for any routing. SEAM_MOE_GROUPED (diagnostic switch):
// 0 never groups, 1 by the rule in moe_experts.cu (default), 2 groups wherever it applies.
// hidden <= kMaxExpertHidden (the GEMV stages x in shared memory as float32).
constexpr int kMaxExpertHidden = 12288;
void launch_moe_experts(const Tensor& out, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                        const Tensor& topk_ids, const Tensor& topk_weights, const MoeScratch& scratch,
                        cudaStream_t stream);
}  // namespace seam::cuda
