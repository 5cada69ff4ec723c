// The FP8 tensor-core product shared by the FP8 GEMV (batch 1..few rows) and the FP8 skinny GEMM:
// mma.sync m16n8k32 on E4M3 operands with float32 accumulation (sm_89 and later; sm_90a here).
//
// Fragment layout (PTX ISA, m16n8k32 with 8-bit operands; g = lane / 4, t = lane % 4; each
// register holds 4 consecutive k, the lowest k in the low byte):
//   A (16 x 32, row-major): a0 = (row g,   k 4t..4t+3)   a1 = (row g+8, k 4t..4t+3)
//                           a2 = (row g,   k 16+4t..)    a3 = (row g+8, k 16+4t..)
//   B (32 x 8, "col"):      b0 = (k 4t..4t+3, col g)     b1 = (k 16+4t.., col g)
//   C (16 x 8, float32):    c0, c1 = (row g, cols 2t, 2t+1)   c2, c3 = (row g+8, cols 2t, 2t+1)
// A dot product does not care in which order its k run, so a kernel may give a lane any 8 bytes of
// row g (a0 | a2) and of row g+8 (a1 | a3) as long as B's b0 | b1 hold the matching 8 bytes of x:
// a 16-byte load of one weight row then feeds two products without any shuffle.
//
// Precision: each E4M3 x E4M3 product is exact in float32, but the tensor core's sum of a k-step's
// products into the accumulator is not IEEE float32 round-to-nearest at every add (on Hopper's FP8
// path it keeps fewer bits; DeepSeek-V3's report measures ~14 for wgmma). Callers bound the error by
// promoting: they restart the tensor-core accumulator every 128 k and add it into a float32 register
// sum in a fixed order, so the result is within the tests' tensor-core bound (kTensorCoreF32).
#pragma once
#include <cstdint>

namespace seam::cuda {

__device__ __forceinline__ void mma_e4m3_16832(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  __trap();  // FP8 tensor cores need sm_89+; the host never picks an mma kernel below that
#endif
}

}  // namespace seam::cuda
