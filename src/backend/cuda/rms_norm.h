// RMSNorm over the last dim, fp32 accumulation. (The residual add is fused into the linear that
// feeds the residual stream: linear_accumulate.)
#pragma once
#include <cuda_runtime.h>

#include "core/tensor.h"

namespace seam::cuda {
// Two kernels: by_size (a warp a row for many rows of <= 1,024, else a block a row) and
// rows_in_registers (a warp a row held in registers, 16-byte vectors: rows up to 2,048 bf16 /
// 1,024 f32 with 16-byte aligned rows, else by_size runs). by_rows (the default) takes
// rows_in_registers from kRmsNormRegisterRows rows on, by_size below: measured on the H200
// (docs/performance.md, thirty-first pass), the register form is faster at prefill's row counts
// (10.8 against 14.5 us at 4,096 x 2,048) and slower at decode's (3.9 against 2.0 us at 64
// rows: one warp's chain a row, too few rows to hide it). SEAM_RMS_NORM_KERNEL: 0 by_size,
// 1 rows_in_registers wherever it applies, 2 by_rows. The kernels agree to float rounding
// (different summation orders).
enum class RmsNormKernel { by_size, rows_in_registers, by_rows };
constexpr int64_t kRmsNormRegisterRows = 1024;
RmsNormKernel rms_norm_kernel_default();
// Whether rows_in_registers runs for these operands.
bool rms_norm_rows_applies(const Tensor& out, const Tensor& x, const Tensor& weight);

// out = x / rms(x) * weight.   x, out [n, d] or [n, heads, d] with packed rows (row stride free;
// may be the same view: in place on q/k inside qkv), weight [d]; all one dtype.
void launch_rms_norm(const Tensor& out, const Tensor& x, const Tensor& weight, float eps, cudaStream_t stream,
                     RmsNormKernel kernel = rms_norm_kernel_default());
}  // namespace seam::cuda
