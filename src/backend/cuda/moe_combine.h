// The last pass of the grouped mixture-of-experts paths: each row's k expert outputs, weighted and
// added to the residual.
#pragma once
#include <cuda_runtime.h>

#include "core/tensor.h"

namespace seam::cuda {

// out[i][h] += sum_j w[i * k + j] * expert_out[i * k + j][h]: j in order, float32, rounded once.
// expert_out [>= n * k, hidden] contiguous, 16-byte aligned, hidden % 8 == 0 (each thread reads 8
// columns of every expert row with 16-byte loads), in out's 16-bit dtype or float32 (unrounded
// expert outputs: the sum then rounds once, as the cpu definition); out any row stride.
void launch_moe_combine(const Tensor& out, const Tensor& expert_out, const Tensor& topk_weights, cudaStream_t stream);

}  // namespace seam::cuda
