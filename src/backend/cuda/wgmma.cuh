// Hopper warpgroup MMA (wgmma, sm_90a only) building blocks: shared-memory matrix
// descriptors for the 128-byte-swizzled layout, the fences and group waits, the two
// m64n128k16 forms the prefill attention uses (A and B from shared memory; A from
// registers), and the E4M3 m64nNk32 forms of the FP8 GEMM (fp8_gemm_wgmma.cu). Every body
// compiles only for sm_90a (__CUDA_ARCH_FEAT_SM90_ALL): the callers guard their kernels the
// same way, so other targets never reach them.
//
// 128-byte swizzle (SW128): a tile is stored in 128-byte lines of 64 16-bit elements; in
// each 1024-byte atom of 8 lines, the 16-byte chunk c of line r sits at chunk c ^ (r % 8).
// Atoms must be 1024-byte aligned (the descriptor's base offset is then 0). Descriptor
// strides (CUTLASS cute/atom/mma_traits_sm90_gmma.hpp, make_gmma_desc; PTX ISA "Matrix
// Descriptor Format"):
//  * K-major operand (the reduction dim contiguous, e.g. Q or K for S = Q K^T): lines are
//    M/N rows; SBO = 1024 (next 8 rows), LBO unused (1). A k16 step inside the 64-element
//    line moves the start address by 32 bytes.
//  * MN-major operand (e.g. V [keys][d] as B of O = P V, "transposed B"): lines are K rows
//    (keys) of 64 N elements; SBO = 1024 (next 8 keys), LBO = the byte distance to the
//    next 64 N elements (the next 64-column half of the tile). A k16 step = 16 lines.
//
// Accumulator layout of m64nN f32 (per warp w of the warpgroup, rows 16w..16w+15, g =
// lane / 4, t = lane % 4): d[n][0..1] = (g, 8n + 2t..2t+1), d[n][2..3] = (g+8, 8n + 2t..),
// i.e. the mma.sync m16n8 C fragment for each 8 columns. The register A operand of m64nNk16
// is the mma.sync m16n8k16 A fragment of the warp's 16 rows. So flash_mma.cuh's softmax
// and P packing apply to wgmma accumulators unchanged.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace seam::cuda::wgmma {

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define SEAM_WGMMA_ENABLED 1
#endif

// Byte offset of 16-byte chunk `chunk` (0..15) of row `row` in a [2][rows][64] SW128 tile of 16-bit
// elements: the two 64-column halves `half_bytes` apart, 128-byte lines, chunk c of line r at
// c ^ (r % 8). The prefill attention kernels' Q, K and V tiles.
__host__ __device__ __forceinline__ int sw128_chunk_offset(int row, int chunk, int half_bytes) {
  return (chunk >> 3) * half_bytes + row * 128 + (((chunk & 7) ^ (row & 7)) << 4);
}

// Warpgroup-wide register budget moves (setmaxnreg) of the warp-specialised kernels: the producer
// gives registers back, the consumers take them.
template <int N>
__device__ __forceinline__ void regs_dealloc() {
#ifdef SEAM_WGMMA_ENABLED
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}
template <int N>
__device__ __forceinline__ void regs_alloc() {
#ifdef SEAM_WGMMA_ENABLED
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}

// Descriptor of a SW128 operand at shared-memory address `addr` (1024-aligned atom base,
// plus k-step offsets below 128); byte strides as above. Fields (>> 4): start 0-13,
// LBO 16-29, SBO 32-45, base offset 49-51 (0), layout 62-63 (1 = 128B swizzle).
__device__ __forceinline__ uint64_t desc_sw128(uint32_t addr, uint32_t lbo_bytes, uint32_t sbo_bytes) {
  return uint64_t((addr >> 4) & 0x3FFF) | uint64_t((lbo_bytes >> 4) & 0x3FFF) << 16 |
         uint64_t((sbo_bytes >> 4) & 0x3FFF) << 32 | uint64_t(1) << 62;
}
// The descriptor moved by `bytes` (a multiple of 16): the start address is the low field.
__device__ __forceinline__ uint64_t desc_advance(uint64_t desc, uint32_t bytes) { return desc + (bytes >> 4); }

// Before the first wgmma of a batch whose register operands (accumulators, A) were written
// by ordinary instructions.
__device__ __forceinline__ void fence() {
#ifdef SEAM_WGMMA_ENABLED
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void commit() {
#ifdef SEAM_WGMMA_ENABLED
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void wait() {
#ifdef SEAM_WGMMA_ENABLED
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
// Shared memory written through the generic proxy (st.shared, cp.async) becomes visible to
// wgmma (async proxy): each writing thread fences, then the block synchronises.
__device__ __forceinline__ void fence_proxy_async() {
#ifdef SEAM_WGMMA_ENABLED
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
// Pins accumulators after a wait: the wgmma asm statements do not name them as read by the
// wait, so without this the compiler could move their uses above it.
template <int N>
__device__ __forceinline__ void fence_operands(float (&d)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(d[i][e])::"memory");
}
// The same for register A fragments: keeps them live (unchanged) until after the wait that
// retires the wgmma reading them, so the compiler cannot reuse their registers earlier.
template <int N>
__device__ __forceinline__ void fence_operands(uint32_t (&a)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(a[i][e])::"memory");
}

#define SEAM_WGMMA_D_REGS                                                               \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"               \
  " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"     \
  " %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"     \
  " %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define SEAM_WGMMA_D_OPS(d)                                                                                     \
  "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),       \
      "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]),   \
      "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]),   \
      "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),   \
      "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]),   \
      "+f"(d[8][3]), "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), \
      "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]),            \
      "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]),            \
      "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]),            \
      "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3])

// d (64 x 128, f32) = A (64 x 16) B (16 x 128) + (accumulate ? d : 0); A and B K-major SW128
// in shared memory.
#define SEAM_WGMMA_SS(ty)                                                                      \
  asm volatile(                                                                                \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                             \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." ty "." ty " " SEAM_WGMMA_D_REGS           \
      ", %64, %65, p, 1, 1, 0, 0;\n}\n"                                                        \
      : SEAM_WGMMA_D_OPS(d)                                                                    \
      : "l"(desc_a), "l"(desc_b), "r"(int(accumulate)))
template <typename T>
__device__ __forceinline__ void m64n128k16_ss(float (&d)[16][4], uint64_t desc_a, uint64_t desc_b, bool accumulate) {
#ifdef SEAM_WGMMA_ENABLED
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    SEAM_WGMMA_SS("bf16");
  else
    SEAM_WGMMA_SS("f16");
#endif
}
#undef SEAM_WGMMA_SS

// d (64 x 128, f32) += A (64 x 16, registers: the warp's m16n8k16 A fragment) B (16 x 128),
// B MN-major SW128 in shared memory (transposed B).
#define SEAM_WGMMA_RS(ty)                                                                      \
  asm volatile(                                                                                \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"                                             \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." ty "." ty " " SEAM_WGMMA_D_REGS           \
      ", {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"                                          \
      : SEAM_WGMMA_D_OPS(d)                                                                    \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1))
template <typename T>
__device__ __forceinline__ void m64n128k16_rs_tb(float (&d)[16][4], const uint32_t (&a)[4], uint64_t desc_b) {
#ifdef SEAM_WGMMA_ENABLED
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    SEAM_WGMMA_RS("bf16");
  else
    SEAM_WGMMA_RS("f16");
#endif
}
#undef SEAM_WGMMA_RS

// d (64 x 256, f32) = A (64 x 16) B (16 x 256) + (accumulate ? d : 0); A and B K-major SW128
// in shared memory (the grouped MoE GEMMs' wide tile). Accumulator layout as m64n128's, 32
// groups of 8 columns: d[n][0..1] = (g, 8n + 2t..), d[n][2..3] = (g + 8, 8n + 2t..).
#define SEAM_WGMMA_D256_REGS \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15," \
  " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31," \
  " %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47," \
  " %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63," \
  " %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79," \
  " %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95," \
  " %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111," \
  " %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
#define SEAM_WGMMA_D256_OPS(d) \
  "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), \
  "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), \
  "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), \
  "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), \
  "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), \
  "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), \
  "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), \
  "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), \
  "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[13][0]), "+f"(d[13][1]), \
  "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), \
  "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3]), "+f"(d[16][0]), "+f"(d[16][1]), \
  "+f"(d[16][2]), "+f"(d[16][3]), "+f"(d[17][0]), "+f"(d[17][1]), "+f"(d[17][2]), "+f"(d[17][3]), \
  "+f"(d[18][0]), "+f"(d[18][1]), "+f"(d[18][2]), "+f"(d[18][3]), "+f"(d[19][0]), "+f"(d[19][1]), \
  "+f"(d[19][2]), "+f"(d[19][3]), "+f"(d[20][0]), "+f"(d[20][1]), "+f"(d[20][2]), "+f"(d[20][3]), \
  "+f"(d[21][0]), "+f"(d[21][1]), "+f"(d[21][2]), "+f"(d[21][3]), "+f"(d[22][0]), "+f"(d[22][1]), \
  "+f"(d[22][2]), "+f"(d[22][3]), "+f"(d[23][0]), "+f"(d[23][1]), "+f"(d[23][2]), "+f"(d[23][3]), \
  "+f"(d[24][0]), "+f"(d[24][1]), "+f"(d[24][2]), "+f"(d[24][3]), "+f"(d[25][0]), "+f"(d[25][1]), \
  "+f"(d[25][2]), "+f"(d[25][3]), "+f"(d[26][0]), "+f"(d[26][1]), "+f"(d[26][2]), "+f"(d[26][3]), \
  "+f"(d[27][0]), "+f"(d[27][1]), "+f"(d[27][2]), "+f"(d[27][3]), "+f"(d[28][0]), "+f"(d[28][1]), \
  "+f"(d[28][2]), "+f"(d[28][3]), "+f"(d[29][0]), "+f"(d[29][1]), "+f"(d[29][2]), "+f"(d[29][3]), \
  "+f"(d[30][0]), "+f"(d[30][1]), "+f"(d[30][2]), "+f"(d[30][3]), "+f"(d[31][0]), "+f"(d[31][1]), \
  "+f"(d[31][2]), "+f"(d[31][3])
#define SEAM_WGMMA_SS256(ty)                                                                   \
  asm volatile(                                                                                \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"                                            \
      "wgmma.mma_async.sync.aligned.m64n256k16.f32." ty "." ty " " SEAM_WGMMA_D256_REGS        \
      ", %128, %129, p, 1, 1, 0, 0;\n}\n"                                                     \
      : SEAM_WGMMA_D256_OPS(d)                                                                 \
      : "l"(desc_a), "l"(desc_b), "r"(int(accumulate)))
template <typename T>
__device__ __forceinline__ void m64n256k16_ss(float (&d)[32][4], uint64_t desc_a, uint64_t desc_b, bool accumulate) {
#ifdef SEAM_WGMMA_ENABLED
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    SEAM_WGMMA_SS256("bf16");
  else
    SEAM_WGMMA_SS256("f16");
#endif
}
#undef SEAM_WGMMA_SS256

// FP8 E4M3 x E4M3 -> f32, k32: d (64 x N) = A (64 x 32) B (32 x N) + (accumulate ? d : 0),
// A and B both K-major SW128 in shared memory (FP8 wgmma reads only K-major operands: PTX ISA
// "wgmma.mma_async", the transpose immediates exist for .f16/.bf16 only, so this form has just
// scale-d, imm-scale-a and imm-scale-b). One 128-byte SW128 line holds 128 E4M3 codes, so a
// k32 step moves the descriptor start by 32 bytes, as a bf16 k16 step does. N in {8, 16, 32, 64, 128, 256}
// (8 and 16: the skinny GEMM's few-token B, fp8_gemm_skinny_wgmma.cu);
// d is the same m16n8 fragment layout as above (N / 8 fragments).
template <int N>
__device__ __forceinline__ void m64k32_e4m3_ss(float (&d)[N / 8][4], uint64_t desc_a, uint64_t desc_b, bool accumulate);
template <>
__device__ __forceinline__ void m64k32_e4m3_ss<8>(float (&d)[1][4], uint64_t desc_a, uint64_t desc_b, bool accumulate) {
#ifdef SEAM_WGMMA_ENABLED
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0, %1, %2, %3}, %4, %5, p, 1, 1;\n}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3])
      : "l"(desc_a), "l"(desc_b), "r"(int(accumulate)));
#else
  (void)d;
  (void)desc_a;
  (void)desc_b;
  (void)accumulate;
#endif
}
template <>
__device__ __forceinline__ void m64k32_e4m3_ss<16>(float (&d)[2][4], uint64_t desc_a, uint64_t desc_b,
                                                  bool accumulate) {
#ifdef SEAM_WGMMA_ENABLED
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1;\n}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),
        "+f"(d[1][3])
      : "l"(desc_a), "l"(desc_b), "r"(int(accumulate)));
#else
  (void)d;
  (void)desc_a;
  (void)desc_b;
  (void)accumulate;
#endif
}
template <>
__device__ __forceinline__ void m64k32_e4m3_ss<32>(float (&d)[4][4], uint64_t desc_a, uint64_t desc_b,
                                                  bool accumulate) {
#ifdef SEAM_WGMMA_ENABLED
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, 1;\n}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),
          "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]),
          "+f"(d[3][2]), "+f"(d[3][3])
      : "l"(desc_a), "l"(desc_b), "r"(int(accumulate)));
#else
  (void)d;
  (void)desc_a;
  (void)desc_b;
  (void)accumulate;
#endif
}
template <>
__device__ __forceinline__ void m64k32_e4m3_ss<64>(float (&d)[8][4], uint64_t desc_a, uint64_t desc_b,
                                                  bool accumulate) {
#ifdef SEAM_WGMMA_ENABLED
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1;\n}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),
          "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]),
          "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]),
          "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),
          "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])
      : "l"(desc_a), "l"(desc_b), "r"(int(accumulate)));
#else
  (void)d;
  (void)desc_a;
  (void)desc_b;
  (void)accumulate;
#endif
}
template <>
__device__ __forceinline__ void m64k32_e4m3_ss<128>(float (&d)[16][4], uint64_t desc_a, uint64_t desc_b,
                                                  bool accumulate) {
#ifdef SEAM_WGMMA_ENABLED
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 " SEAM_WGMMA_D_REGS ", %64, %65, p, 1, 1;\n}\n"
      : SEAM_WGMMA_D_OPS(d)
      : "l"(desc_a), "l"(desc_b), "r"(int(accumulate)));
#else
  (void)d;
  (void)desc_a;
  (void)desc_b;
  (void)accumulate;
#endif
}

template <>
__device__ __forceinline__ void m64k32_e4m3_ss<256>(float (&d)[32][4], uint64_t desc_a, uint64_t desc_b,
                                                  bool accumulate) {
#ifdef SEAM_WGMMA_ENABLED
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 " SEAM_WGMMA_D256_REGS ", %128, %129, p, 1, 1;\n}\n"
      : SEAM_WGMMA_D256_OPS(d)
      : "l"(desc_a), "l"(desc_b), "r"(int(accumulate)));
#else
  (void)d;
  (void)desc_a;
  (void)desc_b;
  (void)accumulate;
#endif
}

#undef SEAM_WGMMA_D_OPS
#undef SEAM_WGMMA_D_REGS
#undef SEAM_WGMMA_D256_OPS
#undef SEAM_WGMMA_D256_REGS

}  // namespace seam::cuda::wgmma
