// Device helpers the mixture-of-experts kernels share (gathered, grouped, shared expert).
#pragma once
#include <cstdint>

#include "backend/cuda/cuda_common.cuh"

namespace seam::cuda {

// topk_ids[slot], or expert 0 for an id outside [0, n_experts): padded rows may carry anything
// (Backend::moe_experts' contract), and they must still read a real expert.
__device__ __forceinline__ int expert_of(const int32_t* ids, int64_t slot, int n_experts) {
  const int e = ids[slot];
  return e < 0 || e >= n_experts ? 0 : e;
}

// The slots s < n_slots with expert_of(ids, s) == e, in increasing order, into list; returns their
// count (every thread). Called by the whole block (kWarps warps, all of them: the ballot and the
// barriers need every thread); list is visible to all after it returns. Slot order makes the
// skinny paths deterministic.
template <int kWarps>
__device__ int collect_slots(int* list, int* warp_count, const int32_t* ids, int n_slots, int n_experts, int e) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int total = 0;
  for (int base = 0; base < n_slots; base += kWarps * 32) {
    const int s = base + threadIdx.x;
    const bool hit = s < n_slots && expert_of(ids, s, n_experts) == e;
    const unsigned mask = __ballot_sync(0xffffffffu, hit);
    if (lane == 0) warp_count[warp] = __popc(mask);
    __syncthreads();
    int before = total, chunk = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const int c = warp_count[w];
      before += w < warp ? c : 0;
      chunk += c;
    }
    if (hit) list[before + __popc(mask & ((1u << lane) - 1u))] = s;
    total += chunk;
    __syncthreads();  // list complete for this round; warp_count free for the next
  }
  return total;
}

// The expert a skinny block serves. Direct: blockIdx.y (a grid row per expert; with nearly every
// expert hit). Compact: the blockIdx.y-th expert, in increasing id order, that some slot routes
// to, or -1 past the last: the grid then needs only min(n_experts, n_slots) rows, so a few rows
// (most experts empty) do not launch a block per empty expert and tile. Called by the whole block
// (kWarps warps); bits holds kMaxSkinnyWords words of shared memory (n_experts <= 32 of them).
constexpr int kMaxSkinnyWords = 128;  // n_experts <= 4096
template <int kWarps>
__device__ int block_expert(bool compact, unsigned* bits, int* chosen, const int32_t* ids, int n_slots,
                            int n_experts) {
  if (!compact) return blockIdx.y;
  const int n_words = (n_experts + 31) / 32;
  for (int w = threadIdx.x; w < n_words; w += kWarps * 32) bits[w] = 0u;
  __syncthreads();
  for (int s = threadIdx.x; s < n_slots; s += kWarps * 32) {
    const int e = expert_of(ids, s, n_experts);
    atomicOr(&bits[e >> 5], 1u << (e & 31));
  }
  __syncthreads();
  if (threadIdx.x < 32) {  // warp 0: a prefix count of the present experts, 32 words a round
    const int lane = threadIdx.x;
    int target = blockIdx.y, found = -1;  // both uniform over the warp
    for (int base = 0; base < n_words && found < 0; base += 32) {
      const int w = base + lane;
      const unsigned word = w < n_words ? bits[w] : 0u;
      const int c = __popc(word);
      int incl = c;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const int y = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= d) incl += y;
      }
      const int excl = incl - c;
      const unsigned holder = __ballot_sync(0xffffffffu, target >= excl && target < incl);
      if (holder != 0u) {
        const int src = __ffs(int(holder)) - 1;
        int e = -1;
        if (lane == src) {
          unsigned rest = word;
          for (int i = 0; i < target - excl; ++i) rest &= rest - 1u;  // drop the lower present experts
          e = w * 32 + __ffs(int(rest)) - 1;
        }
        found = __shfl_sync(0xffffffffu, e, src);
      } else {
        target -= __shfl_sync(0xffffffffu, incl, 31);
      }
    }
    if (lane == 0) *chosen = found;
  }
  __syncthreads();
  return *chosen;
}

// The line holding p into L2 (a hint: no register waits for it).
__device__ __forceinline__ void prefetch_l2_line(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

// Asks L2 for bytes [p, p + n_bytes) (whole 128-byte lines), spread over the block's threads: a
// skinny block puts its whole weight tile in flight at once instead of one sweep of registers a
// warp; its streamed loads then hit L2. p..p+n_bytes must lie inside one allocation.
__device__ __forceinline__ void prefetch_l2(const void* p, int64_t n_bytes) {
  const char* b = static_cast<const char*>(p);
  for (int64_t off = int64_t(threadIdx.x) * 128; off < n_bytes; off += int64_t(blockDim.x) * 128)
    prefetch_l2_line(b + off);
}

// Whether the skinny grids map rows to experts directly (block_expert): from 4 slots an expert
// on average, where an expert is empty with probability ~(1 - k/E)^n <= e^-4; below, compact.
inline bool skinny_direct(int64_t n_slots, int64_t n_experts) { return n_slots >= 4 * n_experts; }

// When a skinny block prefetches its weight tile (the kernels' `prefetch` argument).
enum TilePrefetch : int {
  kPrefetchNone = 0,   // tile above kMaxTilePrefetchBytes: the resident blocks' tiles would not fit L2
  kPrefetchLate = 1,   // once the block's expert is known (compact grids) and has rows
  kPrefetchEarly = 2,  // before the PDL wait (weights never change), rows or not (direct grids only:
                       // the expert must be known before the ids are readable)
};
// 64 KB a block: ~2 resident blocks an SM hold ~17 MB of the H200's 50 MB L2 (Qwen3-30B-A3B's
// tiles are 24-64 KB; Mixtral's 128-917 KB are not prefetched whole).
constexpr int64_t kMaxTilePrefetchBytes = 64 * 1024;
// Early with the direct grid (at most a few percent of the bytes are then empty experts';
// Qwen3-30B-A3B from 64 rows), else late.
inline TilePrefetch tile_prefetch(int64_t tile_bytes, int64_t n_slots, int64_t n_experts) {
  if (tile_bytes > kMaxTilePrefetchBytes) return kPrefetchNone;
  return skinny_direct(n_slots, n_experts) ? kPrefetchEarly : kPrefetchLate;
}

// out[r][h] = out[r][h] + term(r, h), formed in float32 and rounded once, for every r < n and
// h < hidden: a grid-stride loop (the shared expert's gated add).
template <typename T, typename Term>
__device__ __forceinline__ void add_to_rows(T* out, int64_t out_stride, int64_t n, int hidden, Term term) {
  const int64_t n_items = n * hidden;
  for (int64_t it = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; it < n_items;
       it += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = it / hidden;
    const int h = int(it % hidden);
    T* o = out + r * out_stride + h;
    *o = from_float<T>(to_float(*o) + term(r, h));
  }
}

}  // namespace seam::cuda
