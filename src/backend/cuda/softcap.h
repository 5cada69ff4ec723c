// x = cap * tanh(x / cap) in place (Backend::softcap: Gemma 2's final logit soft-capping).
#pragma once
#include <cuda_runtime.h>

#include "core/tensor.h"

namespace seam::cuda {
// x [n, d] float32, rows may be strided; cap > 0.
void launch_softcap(const Tensor& x, float cap, cudaStream_t stream);
}  // namespace seam::cuda
