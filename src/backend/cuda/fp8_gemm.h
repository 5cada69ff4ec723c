// The FP8 product (backend.h "FP8 linear", the product half) from quantized activations:
// out[i][o] (=|+=) sum_g (xs[i][g] * ws(o, g)) * S(i, o, g) (+ bias[o]), S the float32 sum of
// the E4M3 products over group g. CUDA-core kernels, exact with the CPU reference up to the
// order of the float32 sums: the definition on the GPU, and the fallback for every scheme where
// cuBLASLt does not run (fp8_cublaslt.h; on the H200 that is every 128-block weight). Below 16
// rows one warp per output element; from 16 rows a tiled kernel (64 x 64 outputs a block, 4 x 4 a
// thread, K in steps of 64 staged in shared memory) that reads each code once per tile.
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"

namespace seam::cuda {
// codes [n, in] E4M3 contiguous, act_scales [n_groups, n] f32 (fp8_quantize.h); out [n, out]
// in f32/f16/bf16 (rows may be strided), bias [out] in out's dtype or undefined.
void launch_fp8_gemm_simt(const Tensor& out, const Tensor& codes, const Tensor& act_scales, const Fp8Weight& w,
                          const Tensor& bias, bool accumulate, cudaStream_t stream);
}
