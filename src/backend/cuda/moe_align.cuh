// The grouping step of the grouped MoE GEMMs (moe_experts_grouped.h, moe_grouped_wgmma.h): the
// (row, expert) slots sorted by expert from device-side counts, and the M-tile a block serves.
// Templates (each kernel file instantiates its own tile height), so a header.
#pragma once
#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/diagnostic_switch.h"
#include "backend/cuda/moe_common.cuh"

namespace seam::cuda::moe_align {

// index = [offsets (n_experts + 1) | tile starts (n_experts + 1) | sorted slots (n * k)]; the tile
// starts count M-tiles of kTileRows rows (each GEMM kernel aligns for its own tile height).
// One block. Each thread takes kAlignUnroll slots a round with all their id loads issued first
// (a prefill's 32K slots were 32 dependent load-then-atomic rounds a thread, ~40 us on the H200);
// warp 0 scans the counts 32 experts at a time with shuffles.
//
// kStaged (the default where the slots fit; SEAM_MOE_ALIGN_STAGED=0 turns it off): the sorted slots are placed in
// shared memory and copied out in order, 32 consecutive ints a warp store, instead of each slot
// stored to its place in global memory. Why: the one block's scattered 4-byte stores are a
// separate L2 write a lane (32 a warp instruction, ~32K a 4,096-token prefill at Qwen3-30B-A3B's
// top-8) through one SM, the likely bulk of the kernel's ~19.6 us a layer (docs/performance.md,
// twenty-fifth pass: its trace). The slots' order inside an expert's group is the atomics' either
// way; offsets, tile starts and each group's slots are the same. Measured (H200, 2026-12-05, the
// twenty-eighth pass's trace of Qwen3-30B-A3B's prefill of 4,096): 19.0 -> 17.6 us a layer, not the
// 4-7 predicted, so the scattered stores were not the bulk of it.
constexpr int kAlignUnroll = 8;

template <int kTileRows, bool kStaged>
__global__ void moe_align_kernel(int32_t* index, const int32_t* ids, int n_slots, int n_experts) {
  pdl_begin();
  extern __shared__ int counts[];  // [n_experts] counts, [n_experts] cursors, (kStaged) [n_slots] sorted
  int* cursor = counts + n_experts;
  for (int e = threadIdx.x; e < n_experts; e += blockDim.x) counts[e] = 0;
  __syncthreads();
  const int stride = blockDim.x;
  for (int s0 = threadIdx.x; s0 < n_slots; s0 += kAlignUnroll * stride) {
    int ex[kAlignUnroll];
#pragma unroll
    for (int u = 0; u < kAlignUnroll; ++u) {
      const int s = s0 + u * stride;
      ex[u] = s < n_slots ? expert_of(ids, s, n_experts) : -1;
    }
#pragma unroll
    for (int u = 0; u < kAlignUnroll; ++u)
      if (ex[u] >= 0) atomicAdd(&counts[ex[u]], 1);
  }
  __syncthreads();
  int32_t* offsets = index;
  int32_t* tile_start = index + n_experts + 1;
  int32_t* sorted = index + 2 * n_experts + 2;
  if (threadIdx.x < 32) {
    const int lane = threadIdx.x;
    int o = 0, t = 0;  // slots and tiles of the experts before this round's 32
    for (int base = 0; base < n_experts; base += 32) {
      const int e = base + lane;
      const int c = e < n_experts ? counts[e] : 0, tiles = (c + kTileRows - 1) / kTileRows;
      int ic = c, it = tiles;  // inclusive prefix sums over the round's lanes
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const int yc = __shfl_up_sync(0xffffffffu, ic, d), yt = __shfl_up_sync(0xffffffffu, it, d);
        if (lane >= d) {
          ic += yc;
          it += yt;
        }
      }
      if (e < n_experts) {
        offsets[e] = o + ic - c;
        tile_start[e] = t + it - tiles;
        cursor[e] = o + ic - c;
      }
      o += __shfl_sync(0xffffffffu, ic, 31);
      t += __shfl_sync(0xffffffffu, it, 31);
    }
    if (lane == 0) {
      offsets[n_experts] = o;
      tile_start[n_experts] = t;
    }
  }
  __syncthreads();
  // The order inside an expert's group is arbitrary (atomics); every GEMM row is computed on its
  // own, so the results do not depend on it.
  for (int s0 = threadIdx.x; s0 < n_slots; s0 += kAlignUnroll * stride) {
    int ex[kAlignUnroll];
#pragma unroll
    for (int u = 0; u < kAlignUnroll; ++u) {
      const int s = s0 + u * stride;
      ex[u] = s < n_slots ? expert_of(ids, s, n_experts) : -1;
    }
    int* dst = kStaged ? cursor + n_experts : sorted;
#pragma unroll
    for (int u = 0; u < kAlignUnroll; ++u)
      if (ex[u] >= 0) dst[atomicAdd(&cursor[ex[u]], 1)] = s0 + u * stride;
  }
  if constexpr (kStaged) {
    __syncthreads();
    const int* staged = cursor + n_experts;
    for (int i = threadIdx.x; i < n_slots; i += stride) sorted[i] = staged[i];
  }
}

// The expert and rows [row0, row_end) of sorted positions that M-tile `tile` (kTileRows rows, as
// the align kernel counted them) covers; false past the
// step's last tile. The last expert whose first tile is <= tile is the one (empty experts share
// their successor's start, so they are never it).
template <int kTileRows>
__device__ __forceinline__ bool find_tile(const int32_t* index, int n_experts, int tile, int& e, int& row0,
                                          int& row_end) {
  const int32_t* offsets = index;
  const int32_t* tile_start = index + n_experts + 1;
  if (tile >= tile_start[n_experts]) return false;
  int lo = 0, hi = n_experts - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (tile_start[mid] <= tile) lo = mid;
    else hi = mid - 1;
  }
  e = lo;
  row0 = offsets[e] + (tile - tile_start[e]) * kTileRows;
  row_end = offsets[e + 1];
  return true;
}

// Whether the staged form runs: the SEAM_MOE_ALIGN_STAGED switch (1, the default, or 0; read once).
inline bool align_staged_by_switch() {
  static const bool on = env_choice("SEAM_MOE_ALIGN_STAGED", 1, {0, 1}) == 1;
  return on;
}

// The staged form's dynamic shared memory limit: the device's opt-in maximum a block less 1 KB
// of slack (the kernel has no static shared memory).
inline int align_smem_limit() { return smem_optin_max() - 1024; }

// The align kernel on `stream` (one block; sized by n_slots and n_experts alone). staged: the
// kStaged form where its shared memory (counts, cursors and every slot: 4 (2 n_experts + n_slots)
// bytes) fits a block's opt-in maximum less 1 KB (~57K slots on the H200; a 4,096-token prefill
// at top-8 is 32K), else the other; by default the switch says.
inline size_t align_staged_bytes(int64_t n_slots, int n_experts) {
  return size_t(2 * int64_t(n_experts) + n_slots) * sizeof(int);
}
inline bool align_staged_fits(int64_t n_slots, int n_experts) {
  return align_staged_bytes(n_slots, n_experts) <= size_t(align_smem_limit());
}

template <int kTileRows>
inline void launch_moe_align(int32_t* index, const int32_t* ids, int n_slots, int n_experts, cudaStream_t stream,
                             bool staged = align_staged_by_switch()) {
  const size_t staged_bytes = align_staged_bytes(n_slots, n_experts);
  if (staged && align_staged_fits(n_slots, n_experts)) {
    once_per_device(reinterpret_cast<const void*>(moe_align_kernel<kTileRows, true>), [] {
      SEAM_CUDA_CHECK(cudaFuncSetAttribute(moe_align_kernel<kTileRows, true>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, align_smem_limit()));
    });
    launch_kernel(moe_align_kernel<kTileRows, true>, dim3(1), dim3(1024), staged_bytes, stream, index, ids, n_slots,
                  n_experts);
  } else {
    launch_kernel(moe_align_kernel<kTileRows, false>, dim3(1), dim3(1024), size_t(2 * n_experts) * sizeof(int),
                  stream, index, ids, n_slots, n_experts);
  }
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace seam::cuda::moe_align
