// x *= s in place (Backend::scale: Gemma's embedding times sqrt(hidden)).
#pragma once
#include <cuda_runtime.h>

#include "core/tensor.h"

namespace seam::cuda {
// x [n, d], rows may be strided, any float dtype; the product is formed in float32 and rounded once.
void launch_scale(const Tensor& x, float s, cudaStream_t stream);
}  // namespace seam::cuda
