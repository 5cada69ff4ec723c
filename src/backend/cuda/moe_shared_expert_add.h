// Qwen2-MoE's gated shared expert, added to the residual stream.
#pragma once
#include <cuda_runtime.h>

#include "core/tensor.h"

namespace seam::cuda {
// Backend::moe_shared_expert_add: out[i] += sigmoid(gate[i][0]) * y[i], in float32, rounded once.
void launch_moe_shared_expert_add(const Tensor& out, const Tensor& y, const Tensor& gate, cudaStream_t stream);
}  // namespace seam::cuda
