// gather_rows: out[i] = x[idx[i]]; serves embedding (x = the table) and the logits
// gather. An index out of [0, rows) reads row 0, as the CPU reference does: padded
// rows may carry anything.
#pragma once
#include <cuda_runtime.h>

#include "core/tensor.h"

namespace seam::cuda {
// out [m, d], x [rows, d] (rows of both may be strided), idx [m] i32; out and x share the dtype.
void launch_gather_rows(const Tensor& out, const Tensor& x, const Tensor& idx, cudaStream_t stream);
}
