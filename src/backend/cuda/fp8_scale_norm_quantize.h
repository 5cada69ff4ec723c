// The scale epilogue of an FP8 product that accumulates into the residual stream, fused with the
// RMSNorm + FP8 quantization of the updated rows for the next FP8 linear
// (Backend::linear_fp8_accumulate_before_norm): from cuBLASLt's unscaled float32 sums S (fp8_cublaslt.h),
//   residual[i][o] += (xs[i] * ws(o)) * S[i][o] (+ bias[o])      (fp8_scale_epilogue.h's arithmetic)
//   codes / scales of rms_norm(residual[i]) * g under next's activation scheme
//                                                                (fp8_rms_norm_quantize.h's, same chunk layout)
// so both outputs are the two kernels' bits, and the norm kernel's second read of the residual and its
// launch are gone. One 256-thread block a row.
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"

namespace seam::cuda {

// Whether the fused kernel takes these operands: 16-bit residual rows of whole 16-byte vectors (16-byte
// aligned, stride % 8 == 0) at most 16,384 wide, the product's weight per-channel or per-tensor, a bias
// (if any) and the norm weight aligned and of the residual's dtype and width, next's scheme one the norm
// kernel writes (per-token, 128-groups or static per-tensor).
bool fp8_scale_norm_quantize_applies(const Tensor& residual, const Fp8Weight& w, const Tensor& bias,
                                     const Tensor& norm_weight, const Fp8Weight& next);

// residual [m, n_out] (rows r0 .. r0 + m of an n_rows-row batch); sums [m, n_out] float32 contiguous,
// 16-byte aligned; act_scales [m] (the product input's per-token or static scale a row). codes
// [n_rows, n_out] (8-byte aligned) and scales [n_groups, n_rows] are the whole batch's: this launch writes
// rows r0 .. r0 + m of them.
void launch_fp8_scale_norm_quantize(const Tensor& residual, const float* sums, const float* act_scales,
                                    const Fp8Weight& w, const Tensor& bias, const Tensor& norm_weight, float eps,
                                    const Fp8Weight& next, uint8_t* codes, float* scales, int64_t r0, int64_t n_rows,
                                    cudaStream_t stream);

}  // namespace seam::cuda
