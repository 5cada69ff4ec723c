// The RMSNorm that produces FP8 activations directly (backend.h "FP8 linear", the activation
// half, fused with its producer): codes [n, in] E4M3 and scales [n_groups, n] (fp8_quantize.h's
// layout) of rms_norm(x) * norm_weight rounded to x's dtype, without writing the normed rows.
// The normed values are rms_norm.cu's block-per-row arithmetic in its order (the rows it writes
// below 1,024 rows, or at any count for rows wider than 1,024), quantized as fp8_quantize.cu
// quantizes them: so rms_norm then launch_fp8_quantize_act gives the same codes and scales.
// One kernel instead of two, and no bf16 round trip of the normed rows, before the FP8 GEMM of
// qkv and gate_up past the GEMV's batch sizes.
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"

namespace seam::cuda {
// x [n, in] f32/f16/bf16 (rows may be strided); norm_weight [in] in x's dtype, contiguous; w
// gives the activation scheme (and the static input scale).
void launch_fp8_rms_norm_quantize(const Tensor& codes, const Tensor& scales, const Tensor& x, const Tensor& norm_weight,
                                  float eps, const Fp8Weight& w, cudaStream_t stream);
}  // namespace seam::cuda
