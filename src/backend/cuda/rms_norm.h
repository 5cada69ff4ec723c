// RMSNorm over the last dim, fp32 accumulation. (The residual add is fused into the linear that
// feeds the residual stream: linear_accumulate.)
#pragma once
#include <cuda_runtime.h>

#include "core/tensor.h"

namespace seam::cuda {
// out = x / rms(x) * weight.   x, out [n, d] or [n, heads, d] with packed rows (row stride free;
// may be the same view: in place on q/k inside qkv), weight [d]; all one dtype.
void launch_rms_norm(const Tensor& out, const Tensor& x, const Tensor& weight, float eps, cudaStream_t stream);
}  // namespace seam::cuda
