// scatter_i32: dst.flat[pairs[i][0]] = pairs[i][1]; applies a step's page-table
// writes from the step's one input copy (ModelRunner).
#pragma once
#include <cuda_runtime.h>

#include "core/tensor.h"

namespace seam::cuda {
// dst i32 contiguous, pairs [n, 2] i32 (flat index, value); an index outside dst is skipped.
void launch_scatter_i32(const Tensor& dst, const Tensor& pairs, cudaStream_t stream);
}
