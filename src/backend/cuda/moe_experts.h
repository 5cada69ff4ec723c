// The mixture-of-experts feed-forward: the chosen experts' SiLU MLPs, weighted and summed.
#pragma once
#include <cuda_runtime.h>

#include "core/tensor.h"

namespace seam::cuda {
// Backend::moe_experts as gathered GEMVs (llama.cpp's mul_mat_id manner): each (token, chosen
// expert) pair reads only its expert's rows, the ids read from device memory, so the launch sizes
// depend on n alone and a graph replays for any routing. Two kernels: act[i*k+j] = silu(gate_e x_i)
// * up_e x_i; then out[i] += sum_j w_ij down_e act[i*k+j] (j in order, float32, added once).
// hidden <= kMaxExpertHidden (x is staged in shared memory as float32).
constexpr int kMaxExpertHidden = 12288;
void launch_moe_experts(const Tensor& out, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                        const Tensor& topk_ids, const Tensor& topk_weights, const Tensor& act, cudaStream_t stream);
}  // namespace seam::cuda
