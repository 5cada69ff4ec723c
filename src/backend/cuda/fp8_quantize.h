// FP8 activation quantization (backend.h "FP8 linear", the activation half): x [n, in] in
// f32/f16/bf16 (rows may be strided) -> codes [n, in] E4M3 (contiguous) and scales [n, n_groups]
// f32, n_groups = 1 (per token or static) or ceil(in / 128) (dynamic 1x128 groups). Bit-exact
// with fp8_cpu::quantize_row: float32 amax, s = amax / 448 (1 for 0), e4m3(x / s) with
// IEEE division, round to nearest even and saturation (__NV_SATFINITE).
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"

namespace seam::cuda {
void launch_fp8_quantize_act(const Tensor& codes, const Tensor& scales, const Tensor& x, const Fp8Weight& w,
                             cudaStream_t stream);
}
