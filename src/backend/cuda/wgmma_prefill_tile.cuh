// One consumer warpgroup's work on a K/V tile of the Hopper prefill-attention kernels, shared by the
// one-role kernel (attention_prefill_wgmma.cu) and its warp-specialised form (attention_prefill_ws.cu),
// which must stay bit-equal (cuda_attention_test, PrefillWarpSpecialisedEqualsOneRoleWgmma): the
// wgmmas of S = Q K^T and O += P V on the SW128 tiles, the masks and online softmax of a tile's
// scores, and the final normalise-and-store. Included by .cu files only; sm_90a code
// (SEAM_WGMMA_ENABLED) except store_rows.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/flash_mma.cuh"
#include "backend/cuda/prefill_block.cuh"
#include "backend/cuda/wgmma.cuh"

namespace seam::cuda::wgmma_prefill {

constexpr int kD = 128;       // head dim
constexpr int kBlockN = 128;  // keys a tile (wgmma N of S)
constexpr int kLine = 128;    // bytes of one swizzled line: 64 elements

#if defined(SEAM_WGMMA_ENABLED)
// Issues S = Q K^T over d (8 k-steps of m64n128k16, both operands K-major SW128, two 64-column
// halves of kQHalf / kKvHalf bytes), not committed. Warpgroup-uniform callers only.
template <typename T, int kQHalf, int kKvHalf>
__device__ __forceinline__ void issue_s(float (&s)[kBlockN / 8][4], uint64_t q_desc, uint64_t k_desc) {
  wgmma::fence();
#pragma unroll
  for (int ks = 0; ks < kD / 16; ++ks) {
    // k-step ks: half ks / 4 of the row, 32 bytes a step inside its 128-byte lines.
    const uint32_t q_off = (ks >> 2) * kQHalf + (ks & 3) * 32, k_off = (ks >> 2) * kKvHalf + (ks & 3) * 32;
    wgmma::m64n128k16_ss<T>(s, wgmma::desc_advance(q_desc, q_off), wgmma::desc_advance(k_desc, k_off), ks > 0);
  }
}

// Issues O += P V: P from registers (16 keys a k-step), V [keys][d] the MN-major B operand
// (v_desc: LBO = the next 64 columns), not committed.
template <typename T>
__device__ __forceinline__ void issue_pv(float (&o)[kD / 8][4], uint32_t (&pa)[kBlockN / 16][4], uint64_t v_desc) {
  wgmma::fence();
#pragma unroll
  for (int kk = 0; kk < kBlockN / 16; ++kk)
    wgmma::m64n128k16_rs_tb<T>(o, pa[kk], wgmma::desc_advance(v_desc, kk * 16 * kLine));
}
#endif

// What masks a warpgroup's scores and how they are scaled: its rows' positions (pos_lo for the
// thread's first row, pos_hi for row + 8), the warpgroup's key_end and unmasked end (the
// first key some row of it masks), the window (0: none) and the soft-cap (capped: s =
// softcap tanh(s cap_in), the scale folded into cap_in; else the scale rides in scale_log2).
struct TileMask {
  int pos_lo, pos_hi, wg_key_end, wg_unmasked_end, window;
  bool capped;
  float softcap, cap_in, scale_log2;
};

// Masks tile t's scores (causal: only the steps that cross a row's position; the window's
// lower edge only on the tiles that reach below the window of the warpgroup's last row,
// wg_key_end - 1 being its position) and runs the online softmax on them; returns whether a
// row max grew (o must then be scaled by alpha once the P V in flight has landed). Warp-uniform.
__device__ __forceinline__ bool softmax_tile(float (&s)[kBlockN / 8][4], float (&m)[2], float (&l)[2],
                                             float (&alpha)[2], int t, const TileMask& k, int lane) {
  const int key0 = t * kBlockN;
  if (k.capped) {
#pragma unroll
    for (int n = 0; n < kBlockN / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[n][e] = k.softcap * tanhf(s[n][e] * k.cap_in);
  }
  if (key0 + kBlockN > k.wg_unmasked_end || (k.window > 0 && key0 < k.wg_key_end - k.window)) {
#pragma unroll
    for (int n = 0; n < kBlockN / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = key0 + n * 8 + (lane & 3) * 2 + (e & 1);
        const int pos = e < 2 ? k.pos_lo : k.pos_hi;
        if (key > pos || (k.window > 0 && key <= pos - k.window)) s[n][e] = -INFINITY;
      }
  }
  bool grew = false;
  flash::softmax_rows<kBlockN / 8, true>(s, m, l, alpha, grew, k.scale_log2);
  return __any_sync(0xffffffffu, grew);
}

// Normalises the thread's two rows of O (row_lo and row_lo + 8 of the block's packed rows) by
// their softmax sums (times v_scale: 1 but for an FP8 cache) and stores the valid ones.
template <typename T, int kGroups>
__device__ __forceinline__ void store_rows(const float (&o)[kD / 8][4], const float (&l)[2], float v_scale,
                                           const AttentionParams& p, const flash::PrefillBlock<kGroups>& info,
                                           int row_lo, int n_rows, int lane) {
  T* out = static_cast<T*>(p.out);
  const int t2 = (lane & 3) * 2;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float sum = l[h];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const int row = row_lo + h * 8;
    if (row >= n_rows) continue;
    const float inv = sum > 0.f ? v_scale / sum : 0.f;
    T* dst = out + flash::prefill_row_offset<kD>(info, p.group, p.out_stride, row);
#pragma unroll
    for (int d = 0; d < kD / 8; ++d)
      *reinterpret_cast<uint32_t*>(dst + d * 8 + t2) = flash::pack2<T>(o[d][2 * h] * inv, o[d][2 * h + 1] * inv);
  }
}

}  // namespace seam::cuda::wgmma_prefill
