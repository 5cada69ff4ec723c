// The FP8 product (backend.h "FP8 linear", the product half) on Hopper's FP8 tensor cores
// (wgmma m64nNk32 E4M3, sm_90a) with the scales applied in the kernel: no float32 sums leave it.
//   out[i][o] (=|+=) sum_g (xs(i, g) * ws(o, g)) * S(i, o, g) (+ bias[o])
// from the activation codes and scales fp8_quantize.h writes and the weight's codes. Each 128-wide
// K block's wgmma partial sums are added into float32 registers ("promotion"), scaled first by
// xs(i, kb) * ws(o, kb) for block128 weights; per-tensor / per-channel weights sum all of K so and
// multiply by xs(i) * ws(o) once in the epilogue, which then adds the bias, the accumulate and
// rounds once to out's dtype (fp8_gemm.cu's arithmetic after S).
// Numerics: inside one K block the tensor cores add the E4M3 products with Hopper's reduced
// (~13-bit, truncating) alignment, not IEEE float32; promoting every 128 products bounds that
// error to ~2^-13 of each block's sum of |products| (the K-length growth cuBLASLt without
// promotion would have is gone). Tests: tests/cuda/cuda_fp8_gemm_wgmma_test.cpp.
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"

namespace seam::cuda {

// Whether launch_fp8_gemm_wgmma takes this product: an sm_90a build on a compute capability 9.0
// GPU, K (w's columns) % 128 == 0, N (w's rows) % 8 == 0, codes [n, K] contiguous and w's codes
// 16-byte aligned, out f32/f16/bf16 [n, N] (rows may be strided). Every weight scheme applies
// (block128 with its dynamic 1x128 activation groups).
bool fp8_gemm_wgmma_applies(const Tensor& out, const Tensor& codes, const Fp8Weight& w);

// codes [n, K] E4M3 contiguous, act_scales [n_groups, n] f32 (fp8_quantize.h: n_groups = K / 128
// for block128 weights, else 1); bias [N] in out's dtype or undefined. Graph-capturable: no
// allocation, no host synchronisation (the kernel's shared-memory limit is raised once per
// instantiation on first use). overlap: the main loop, 1 overlapped (K block kb's wgmmas run while
// kb - 1's partial is promoted), 0 serial, -1 (callers) the SEAM_FP8_WGMMA_OVERLAP switch (0 or 1,
// default 1); the tests and the bench name one.
void launch_fp8_gemm_wgmma(const Tensor& out, const Tensor& codes, const Tensor& act_scales, const Fp8Weight& w,
                           const Tensor& bias, bool accumulate, cudaStream_t stream, int overlap = -1);

// The block tile the launch picks for n rows and N outputs on a GPU of n_sms multiprocessors
// (host-side rule, exposed for the bench and the tests): {rows, outputs} of a block.
struct Fp8WgmmaTile {
  int rows, cols;
};
Fp8WgmmaTile fp8_gemm_wgmma_tile(int64_t n, int64_t n_out, int n_sms);

}  // namespace seam::cuda
