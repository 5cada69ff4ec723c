// FP8 activation quantization (backend.h "FP8 linear", the activation half): x [n, in] in
// f32/f16/bf16 (rows may be strided) -> codes [n, in] E4M3 (contiguous) and scales [n_groups, n]
// f32 (token fastest: the layout of cuBLASLt's VEC128_32F scales for the activations),
// n_groups = 1 (per token or static: the static scale is written for every row, so the
// outer-vector GEMM reads one layout) or ceil(in / 128) (dynamic 1x128 groups). Bit-exact with
// fp8_cpu::quantize_row (fp8_act.cuh).
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"

namespace seam::cuda {
void launch_fp8_quantize_act(const Tensor& codes, const Tensor& scales, const Tensor& x, const Fp8Weight& w,
                             cudaStream_t stream);
}
