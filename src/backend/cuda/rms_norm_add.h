// residual += rms_norm(x) * weight (Backend::rms_norm_add: Gemma's post-attention and
// post-feed-forward norms, added to the residual stream in one pass).
#pragma once
#include <cuda_runtime.h>

#include "core/tensor.h"

namespace seam::cuda {
// residual, x [n, d] (rows may be strided), weight [d], one float dtype; the sum of squares, the
// normed value and the add are float32, rounded once into residual.
void launch_rms_norm_add(const Tensor& residual, const Tensor& x, const Tensor& weight, float eps,
                         cudaStream_t stream);
}  // namespace seam::cuda
