// RoPE's rotation of one pair, the arithmetic every CUDA kernel that rotates shares (rope.cu and
// the epilogues that fuse it: fp8_gemv_common.cuh, gemv.cu, qk_norm_rope_store.cu).
#pragma once
#include <cuda_runtime.h>

namespace seam::cuda {

// (x0, x1) rotated by the angle of cosine c and sine s: y0 = x0 c - x1 s, y1 = x1 c + x0 s, each
// product and the difference / sum rounded on its own (the CPU reference's arithmetic). Written
// as plain expressions, nvcc may contract either product into an FMA (fmad=true), a choice made
// per inlined instance: rope.cu and the GEMV epilogues that must equal it bit for bit
// (fp8_gemv's, gemv.cu's, qk_norm_rope_store.cu's) then differ by one rounding wherever the
// choices differ (data dependent: a few elements a case, f16 more than bf16; the suspected cause
// of GemvRopeStoreEqualsDecomposition's rows-2 failures after the FP8 GEMV split). The _rn
// intrinsics are never contracted, so every kernel that rotates computes the same bits.
__device__ __forceinline__ void rope_rotate(float x0, float x1, float c, float s, float& y0, float& y1) {
  y0 = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
  y1 = __fadd_rn(__fmul_rn(x1, c), __fmul_rn(x0, s));
}

}  // namespace seam::cuda
