// RMSNorm over the last dim, fp32 accumulation. (The residual add is fused into the linear that
// feeds the residual stream: linear_accumulate.)
#pragma once
#include <cuda_runtime.h>

#include "core/tensor.h"

namespace seam::cuda {
// Two kernels: by_size (a warp a row for many rows of <= 1,024, else a block a row; the default)
// and rows_in_registers (a warp a row held in registers, 16-byte vectors: rows up to 2,048 bf16 /
// 1,024 f32 with 16-byte aligned rows, else by_size runs; SEAM_RMS_NORM_KERNEL=1). They agree to
// float rounding (different summation orders).
enum class RmsNormKernel { by_size, rows_in_registers };
RmsNormKernel rms_norm_kernel_default();
// Whether rows_in_registers runs for these operands.
bool rms_norm_rows_applies(const Tensor& out, const Tensor& x, const Tensor& weight);

// out = x / rms(x) * weight.   x, out [n, d] or [n, heads, d] with packed rows (row stride free;
// may be the same view: in place on q/k inside qkv), weight [d]; all one dtype.
void launch_rms_norm(const Tensor& out, const Tensor& x, const Tensor& weight, float eps, cudaStream_t stream,
                     RmsNormKernel kernel = rms_norm_kernel_default());
}  // namespace seam::cuda
