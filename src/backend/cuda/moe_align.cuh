// The grouping step of the grouped MoE GEMMs (moe_experts_grouped.h, moe_grouped_wgmma.h): the
// (row, expert) slots sorted by expert from device-side counts, and the M-tile a block serves.
// Templates (each kernel file instantiates its own tile height), so a header.
#pragma once
#include <cstdint>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/moe_common.cuh"

namespace seam::cuda::moe_align {

// index = [offsets (n_experts + 1) | tile starts (n_experts + 1) | sorted slots (n * k)]; the tile
// starts count M-tiles of kTileRows rows (each GEMM kernel aligns for its own tile height).
// One block. Each thread takes kAlignUnroll slots a round with all their id loads issued first
// (a prefill's 32K slots were 32 dependent load-then-atomic rounds a thread, ~40 us on the H200);
// warp 0 scans the counts 32 experts at a time with shuffles.
constexpr int kAlignUnroll = 8;

template <int kTileRows>
__global__ void moe_align_kernel(int32_t* index, const int32_t* ids, int n_slots, int n_experts) {
  pdl_begin();
  extern __shared__ int counts[];  // [n_experts] counts, then [n_experts] cursors
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
#pragma unroll
    for (int u = 0; u < kAlignUnroll; ++u)
      if (ex[u] >= 0) sorted[atomicAdd(&cursor[ex[u]], 1)] = s0 + u * stride;
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

// The align kernel on `stream` (one block; sized by n_slots and n_experts alone).
template <int kTileRows>
inline void launch_moe_align(int32_t* index, const int32_t* ids, int n_slots, int n_experts, cudaStream_t stream) {
  launch_kernel(moe_align_kernel<kTileRows>, dim3(1), dim3(1024), size_t(2 * n_experts) * sizeof(int), stream, index,
                ids, n_slots, n_experts);
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace seam::cuda::moe_align
