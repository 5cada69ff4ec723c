// SiLU-and-multiply of the fused gate/up projection.
#pragma once
#include <cuda_runtime.h>

#include "core/tensor.h"

namespace seam::cuda {
// out = silu(gate) * up, gate_up = [gate | up].   gate_up [n, 2*inter], out [n, inter]; rows may be strided.
void launch_silu_mul(const Tensor& out, const Tensor& gate_up, cudaStream_t stream);
}
