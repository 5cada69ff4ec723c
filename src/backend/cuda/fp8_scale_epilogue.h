// The scales of the FP8 linear (backend.h "FP8 linear", the product half) applied after an
// unscaled tensor-core product: out[i][o] (=|+=) (xs[i] * ws(o)) * S[i][o] (+ bias[o]), S the
// float32 sums of E4M3 products that cuBLASLt wrote without scales (fp8_cublaslt.h's unscaled
// route: Hopper's cuBLASLt has no outer-vector scale mode). The arithmetic after S is
// fp8_gemm.cu's, in its order.
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"

namespace seam::cuda {
// out [n, n_out] f32/f16/bf16 (rows may be strided); sums [n, n_out] f32 contiguous; act_scales
// [n] f32 (per-token or a static scale per row, fp8_quantize.h); w per_tensor or per_channel;
// bias [n_out] in out's dtype or undefined.
void launch_fp8_scale_epilogue(const Tensor& out, const float* sums, const float* act_scales, const Fp8Weight& w,
                               const Tensor& bias, bool accumulate, cudaStream_t stream);
}
