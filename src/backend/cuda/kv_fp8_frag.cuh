// The register-fragment path of flash decode over an FP8 KV cache (SEAM_DECODE_FP8_REGS=1,
// attention_decode.cu): K and V fragments are taken straight from the cp.async ring's tiles of
// codes with ldmatrix and decoded in registers (kv_fp8.cuh's e4m3x4_to_pairs), instead of each
// warp decoding its tile into a bf16/f16 tile in shared memory and reading that back with
// ldmatrix (kv_fp8_tile.cuh's dequant_kv_tiles_swizzled). What goes: a tile's shared-memory round
// trip of the decoded values (~16 8-byte loads, 16 16-byte stores, 16 ldmatrix a lane), its two
// __syncwarp, the conversion unit's ~4 instructions a pair of codes, and half the block's shared
// memory (more blocks an SM).
//
// How the fragments line up (m16n8k16, g = lane / 4, t = lane % 4; flash_mma.cuh). ldmatrix's
// b16 view of an 8-row x 16-byte matrix of codes gives lane (g, t) the 4 codes of row g at bytes
// 4t .. 4t + 3; e4m3x4_to_pairs turns them into p02 = (byte 0, byte 2) and p13 = (byte 1, byte 3).
//
// QK (a K tile [16 keys][D] codes, tile rows = keys): for k-step ks (dims 16 ks .. 16 ks + 15)
// and the 8 keys kg * 8 .. + 7, lane (g, t) holds key kg * 8 + g, dims 16 ks + 4t + {0, 1, 2, 3};
// p02 is the B fragment's b0 and p13 its b1 when the k-step's logical index k maps to the dim
// 2t -> 4t, 2t + 1 -> 4t + 2, 2t + 8 -> 4t + 1, 2t + 9 -> 4t + 3. Q's A fragments are loaded
// under the same map (load_q_fragments_fp8_regs), so S = Q K^T is unchanged up to the MMA's
// summation order within a k-step.
//
// P V (a V tile [16 keys][D] codes): for the 16 dims 16 j .. 16 j + 15 and the 8 keys
// kg * 8 .. + 7, p02 is the fragment of an 8 x 8 matrix A with rows = keys and column c =
// dim 16 j + 4 (c / 2) + 2 (c % 2); p13 that of B, column c = that dim + 1. movmatrix.trans turns
// each into its transpose's fragment: lane (g, t) holds keys 2t, 2t + 1 of column g, the B
// fragment of P V for the n-tile whose column g is that dim (b0 from kg = 0, b1 from kg = 1).
// So the output's C fragments are permuted the same way: o[2 j] holds dims 16 j + 4t and
// 16 j + 4t + 2, o[2 j + 1] dims 16 j + 4t + 1 and 16 j + 4t + 3 (fp8_regs_dim gives them).
#pragma once
#include <cstdint>

#include "backend/cuda/flash_mma.cuh"
#include "backend/cuda/kv_fp8.cuh"
#include "backend/cuda/kv_fp8_tile.cuh"

namespace seam::cuda::flash {

__device__ __forceinline__ uint32_t movmatrix_trans(uint32_t a) {
  uint32_t d;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(d) : "r"(a));
  return d;
}

// ldmatrix.x4 of two 16-byte chunks (2p, 2p + 1) of both 8-key halves of a [16][D] tile of codes
// (code_tile_offset): lane L addresses key (L / 8 % 2) * 8 + L % 8 of chunk 2p + L / 16, so matrix
// m of r is (key half m % 2, chunk 2p + m / 2). QK reads K's k-steps this way, P V V's dim blocks.
template <int D>
__device__ __forceinline__ void ldmatrix_codes_x4(uint32_t (&r)[4], const uint8_t* codes, int p, int lane) {
  const int mi = lane >> 3;
  ldmatrix_x4(r, smem_addr(codes + code_tile_offset<D>((mi & 1) * 8 + (lane & 7), 2 * p + (mi >> 1))));
}

// The A fragments of 16 query rows under the register path's dim map (above): per k-step, a0 / a1
// = (dim 4t, dim 4t + 2) of rows g / g + 8 and a2 / a3 = (dim 4t + 1, dim 4t + 3). A null row is
// zero.
template <typename T, int D>
__device__ __forceinline__ void load_q_fragments_fp8_regs(uint32_t (&q)[D / 16][4], const T* row_lo,
                                                          const T* row_hi, int lane) {
  const int t4 = (lane & 3) * 4;
#pragma unroll
  for (int ks = 0; ks < D / 16; ++ks) {
    const int c = ks * 16 + t4;  // 4 values, 8 bytes aligned
    const uint2 lo = row_lo ? *reinterpret_cast<const uint2*>(row_lo + c) : make_uint2(0u, 0u);
    const uint2 hi = row_hi ? *reinterpret_cast<const uint2*>(row_hi + c) : make_uint2(0u, 0u);
    // x = (d0, d1), y = (d2, d3) as b16 pairs: (d0, d2) = bytes 0-1 of x, 0-1 of y; (d1, d3) = 2-3, 2-3.
    q[ks][0] = __byte_perm(lo.x, lo.y, 0x5410);
    q[ks][1] = __byte_perm(hi.x, hi.y, 0x5410);
    q[ks][2] = __byte_perm(lo.x, lo.y, 0x7632);
    q[ks][3] = __byte_perm(hi.x, hi.y, 0x7632);
  }
}

// S (16 rows x 16 keys) = Q K^T from a K tile of codes [16][D] laid out by code_tile_offset.
// One ldmatrix_codes_x4 covers two k-steps of both 8-key halves: matrix m = (kg = m % 2, k-step
// 2p + m / 2).
template <typename T, int D>
__device__ __forceinline__ void qk_tile_fp8_regs(float (&s)[2][4], const uint32_t (&q)[D / 16][4],
                                                 const uint8_t* k_codes, int lane) {
#pragma unroll
  for (int n = 0; n < 2; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
  for (int p = 0; p < D / 32; ++p) {
    uint32_t r[4];
    ldmatrix_codes_x4<D>(r, k_codes, p, lane);
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      uint32_t b0, b1;
      e4m3x4_to_pairs<T>(r[m], b0, b1);
      mma_16816(s[m & 1], q[2 * p + (m >> 1)], b0, b1, T{});
    }
  }
}

// O (16 rows x D, the permuted dims above) += P V, P packed as the A fragments of the 16 keys
// (pack_p_atoms), from a V tile of codes [16][D] laid out by code_tile_offset. One
// ldmatrix_codes_x4 covers two 16-dim blocks of both 8-key halves: matrix m = (kg = m % 2, block
// 2p + m / 2).
template <typename T, int D>
__device__ __forceinline__ void pv_tile_fp8_regs(float (&o)[D / 8][4], const uint32_t (&pa)[4],
                                                 const uint8_t* v_codes, int lane) {
#pragma unroll
  for (int p = 0; p < D / 32; ++p) {
    uint32_t r[4];
    ldmatrix_codes_x4<D>(r, v_codes, p, lane);
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // block j = 2p + h: matrices 2h (keys 0-7) and 2h + 1 (keys 8-15)
      const int j = 2 * p + h;
      uint32_t a02, a13, b02, b13;
      e4m3x4_to_pairs<T>(r[2 * h], a02, a13);
      e4m3x4_to_pairs<T>(r[2 * h + 1], b02, b13);
      mma_16816(o[2 * j], pa, movmatrix_trans(a02), movmatrix_trans(b02), T{});
      mma_16816(o[2 * j + 1], pa, movmatrix_trans(a13), movmatrix_trans(b13), T{});
    }
  }
}

// The dim of the output value o[n][e] (n < D / 8, e < 4: e / 2 picks the row) a lane holds on
// the register path: n = 2 j + b, e % 2 = h -> 16 j + 4t + 2h + b.
__device__ __forceinline__ int fp8_regs_dim(int n, int e, int lane) {
  return 16 * (n >> 1) + 4 * (lane & 3) + 2 * (e & 1) + (n & 1);
}

}  // namespace seam::cuda::flash
