// out = act(gate) * up for gate_up = [gate | up] (Backend::gated_act; silu_mul is its silu case).
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"

namespace seam::cuda {
// out [n, inter], gate_up [n, 2 * inter] (rows may be strided), one float dtype; computed in float32.
void launch_gated_act(const Tensor& out, const Tensor& gate_up, Activation a, cudaStream_t stream);
}  // namespace seam::cuda
