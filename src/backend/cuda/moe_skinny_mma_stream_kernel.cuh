// The streamed skinny MoE kernel (moe_skinny_mma_stream.h): its constants, the weight stream and the
// kernel body. Included by moe_skinny_mma_stream.cu only, whose launchers pick the variant (kCfgs),
// size the shared memory and the grid.
//
// The fragment layout is moe_skinny_mma.cu's (skinny_gemm.cu's): within a 32-k chunk, lane
// (g = lane / 4, c = lane % 4) holds k [8c, 8c + 8) of A rows g and g + 8 and of B column g of
// each n-tile as one 16-byte vector each and feeds them to two m16n8k16 steps; the map from
// fragment k to memory k is the same for A and B, so each dot product is the exact sum of the
// right products in another order. A ring step is two such chunks (64 k): the 4 lanes of a quad
// copy a row's whole 128-byte line, and each lane reads back only the vectors it copied itself,
// so cp.async.wait_group alone orders them (no warp or block barrier in the loop). The whole-line
// variants (StreamCfg::lines) copy a row's line with 8 lanes into the same slots, and add the
// __syncwarp that cross-lane reads need.
#pragma once
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/flash_mma.cuh"
#include "backend/cuda/moe_common.cuh"
#include "backend/cuda/moe_skinny_args.cuh"
#include "backend/cuda/moe_stream_variants.cuh"

namespace seam::cuda::skinny_stream_detail {

constexpr int kWarps = 4;            // a block: 4 warps on one expert, each its own tiles
constexpr int kThreads = kWarps * 32;
constexpr int kChunk = 32;           // k per chunk: two m16n8k16 steps
constexpr int kVecsPerChunk = 4;     // 16-byte vectors per row per chunk (one per lane of a quad)
constexpr int kStepVecs = 4;         // vectors a lane copies a step: rows lo and hi x 2 chunks
constexpr int kStageVecs = kStepVecs * 32;  // a warp's step: 2 KB
constexpr int kMaxNT = 2;            // n-tiles of 8 slots a pass over the weights
constexpr int kCollectUnroll = 4;    // topk_ids a thread has in flight while collecting

using namespace moe_stream;  // the variants' table (moe_stream_variants.cuh)

constexpr size_t ring_bytes_of(int v) {
  return size_t(kWarps) * kCfgs[v].stages * kStageVecs * 16;  // 40 KB a block at 5 stages
}
template <int V>
constexpr size_t ring_bytes() {
  return ring_bytes_of(V);
}

// cp.async.wait_group as a compiler barrier too ("memory"): the plain shared loads of the step
// that follow must not be hoisted above it (no warp barrier follows, unlike the flash kernels).
template <int N>
__device__ __forceinline__ void ring_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// ring_wait<n>() for a run-time n <= N: a constant once the caller's loop over n is unrolled.
template <int N>
__device__ __forceinline__ void ring_wait_at_most(int n) {
  if constexpr (N > 0) {
    if (n < N) return ring_wait_at_most<N - 1>(n);
  }
  ring_wait<N>();
}

template <bool kGated>
constexpr int kOut = kGated ? 8 : 16;  // output features a tile (gated: 8 gate + 8 up A rows)
template <bool kGated, int V>
constexpr int kTilesPerWarp = kGated ? kCfgs[V].gu_tiles : kCfgs[V].dn_tiles;  // down 2: 2 x 24 KB at inter 768

// A 16-byte weight copy into the ring with variant V's L2 hints (see StreamCfg::hint).
template <int kHint>
__device__ __forceinline__ void ring_copy(void* dst, const void* src, uint64_t policy) {
  if constexpr (kHint == 0) {
    flash::cp_async_16(dst, src, true);
  } else if constexpr (kHint == kHintPrefetch256) {
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;\n" ::"r"(flash::smem_addr(dst)), "l"(src));
  } else if constexpr (kHint == kHintEvictFirst) {
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n" ::"r"(flash::smem_addr(dst)),
                 "l"(src), "l"(policy));
  } else {
    asm volatile("cp.async.cg.shared.global.L2::cache_hint.L2::256B [%0], [%1], 16, %2;\n" ::"r"(
                     flash::smem_addr(dst)),
                 "l"(src), "l"(policy));
  }
}

__device__ __forceinline__ uint64_t evict_first_policy() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
  return p;
}

// collect_slots (moe_common.cuh) with kCollectUnroll ids a thread loaded before the first ballot:
// one L2 round trip for 512 slots instead of one a 128-slot round. Same result: e's slots in
// increasing order (round, then u, then warp, then lane is increasing slot order).
__device__ int collect_slots_unrolled(int* list, int (*warp_count)[kWarps], const int32_t* ids, int n_slots,
                                      int n_experts, int e) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const unsigned below = (1u << lane) - 1u;
  int total = 0;
  for (int base = 0; base < n_slots; base += kCollectUnroll * kThreads) {
    bool hit[kCollectUnroll];
#pragma unroll
    for (int u = 0; u < kCollectUnroll; ++u) {
      const int s = base + u * kThreads + int(threadIdx.x);
      hit[u] = s < n_slots && expert_of(ids, s, n_experts) == e;
    }
    unsigned mask[kCollectUnroll];
#pragma unroll
    for (int u = 0; u < kCollectUnroll; ++u) {
      mask[u] = __ballot_sync(0xffffffffu, hit[u]);
      if (lane == 0) warp_count[u][warp] = __popc(mask[u]);
    }
    __syncthreads();
#pragma unroll
    for (int u = 0; u < kCollectUnroll; ++u) {
      int before = total, round = 0;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) {
        const int cnt = warp_count[u][w];
        before += w < warp ? cnt : 0;
        round += cnt;
      }
      if (hit[u]) list[before + __popc(mask[u] & below)] = base + u * kThreads + int(threadIdx.x);
      total += round;
    }
    __syncthreads();  // list complete for this round; warp_count free for the next
  }
  return total;
}

// A warp's stream: its tiles' weight steps, issued into its ring in order (tile-major, then k).
template <typename T, bool kGated, int V>
struct Stream {
  static constexpr int kStages = kCfgs[V].stages, kGroup = kCfgs[V].group, kHint = kCfgs[V].hint;
  const T* w_e;
  uint4* ring;   // this warp's kStages x kStageVecs, lane-interleaved
  int n_in, n_out, n_chunks, n_steps, tile0, total;
  int lane, g, c;
  uint64_t policy;
  int issued = 0, tile = 0, step = 0, stage = 0;  // the next step to issue and its ring stage

  // The step `issued` of the warp's run into ring stage `stage`; always commits one group (maybe
  // empty) so wait_group counts stay in step with the consumer.
  __device__ __forceinline__ void issue() {
    if (issued < total) {
      const int f0 = (tile0 + tile) * kOut<kGated>;
      const bool two = 2 * step + 1 < n_chunks;  // an odd chunk count leaves the tile's last step half
      if constexpr (kCfgs[V].lines) {
        // Copy i: tile row r = 4i + lane / 8 (A row r < 8: lo of g = r; else hi of g = r - 8),
        // its 16-byte piece v = lane % 8 of the step's 128-byte line (chunk v / 4, vector v % 4),
        // into the slot the consumer lane (g, c) reads: (2 chunk + hi) x 32 + 4 g + c.
        const int v = lane & 7, ch = v >> 2, cc = v & 3;
        const int64_t k0 = int64_t(step) * 2 * kChunk + 8 * v;
        uint4* st = ring + stage * kStageVecs;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int r = 4 * i + (lane >> 3), gg = r & 7, hi = r >> 3;
          const int row = hi == 0 ? f0 + gg : (kGated ? n_out + f0 + gg : f0 + gg + 8);
          if (ch == 0 || two) ring_copy<kHint>(st + (2 * ch + hi) * 32 + 4 * gg + cc, w_e + int64_t(row) * n_in + k0, policy);
        }
      } else {
        const int lo = f0 + g, hi = kGated ? n_out + f0 + g : f0 + g + 8;  // gate/up rows, or down rows g, g + 8
        const int64_t k0 = int64_t(step) * 2 * kChunk + 8 * c;
        const T* rlo = w_e + int64_t(lo) * n_in + k0;
        const T* rhi = w_e + int64_t(hi) * n_in + k0;
        uint4* st = ring + stage * kStageVecs + lane;
        ring_copy<kHint>(st, rlo, policy);
        ring_copy<kHint>(st + 32, rhi, policy);
        if (two) {
          ring_copy<kHint>(st + 64, rlo + kChunk, policy);
          ring_copy<kHint>(st + 96, rhi + kChunk, policy);
        }
      }
      if (++step == n_steps) step = 0, ++tile;
      stage = stage + 1 == kStages ? 0 : stage + 1;
    }
    ++issued;
    flash::cp_async_commit();
  }
  __device__ __forceinline__ void restart() {
    if constexpr (kCfgs[V].lines) __syncwarp();  // the last pass's reads of the stages refilled next
    issued = tile = step = stage = 0;
  }
  // The first kStages - kGroup steps; stream_pass issues the rest kGroup at a time.
  __device__ __forceinline__ void prologue() {
#pragma unroll
    for (int s = 0; s < kStages - kGroup; ++s) issue();
  }
};

// One pass of a warp over its whole run for slots[0..m) (m <= 8 NT), the ring's first
// kStages - kGroup steps already issued: each tile's outputs written when its last step is summed.
// Slots past m multiply zeros and are never written. With staged x (StreamCfg::x_rows) the x
// vectors of slots i < x_rows come from xs (stage_x's layout), the rest from global memory; the
// vectors, and so the mma inputs and their order, are the same either way.
// The loop goes kGroup steps at a time: first the kGroup stages the group before consumed (the first group: the ones the prologue left
// empty) are refilled, back to back, then the group's steps are consumed; before step q0 + r is
// read, kStages + q0 groups have been committed and steps up to q0 + r must have landed, so at
// most kStages - 1 - r may still be pending.
template <typename T, bool kGated, int NT, int V>
__device__ __forceinline__ void stream_pass(const SkinnyMoeArgs<T>& a, Stream<T, kGated, V>& s, const int* slots,
                                            int m, const uint4* xs) {
  constexpr int kStages = kCfgs[V].stages, kGroup = kCfgs[V].group;
  constexpr int kXT = kCfgs[V].x_rows / 8;  // n-tiles j < kXT: x from xs
  static_assert(kGroup >= 1 && kGroup < kStages, "a group leaves a stage or more in flight");
  const uint4 zero = make_uint4(0, 0, 0, 0);
  const int g = s.g, c = s.c;
  const uint4* xr[NT];
  bool x_ok[NT];
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int i = 8 * j + g;
    x_ok[j] = i < m;
    if (j < kXT) {
      xr[j] = xs + i * (s.n_in / 8) + c;
    } else {
      const int slot = slots[x_ok[j] ? i : 0];
      const int64_t row = kGated ? slot / a.k : slot;
      xr[j] = reinterpret_cast<const uint4*>(a.in + row * a.in_stride) + c;
    }
  }
  const int swz = x_swizzle(s.n_in / 8, g);  // staged row 8j + g: its vectors' swizzle (c < 4: bit 2 only)
  // x (or act) vectors of a step's two chunks, loaded a step ahead: their L2 latency overlaps
  // the ring wait and the mma of the step before instead of adding to it. They depend on the
  // step's k alone (every tile multiplies the same slots).
  auto load_x = [&](int at_step, uint4 (&lo)[NT], uint4 (&hi)[NT]) {
    const int ch = 2 * at_step;
    const bool has_hi = ch + 1 < s.n_chunks;
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      if (j < kXT) {
        lo[j] = x_ok[j] ? xr[j][(ch * kVecsPerChunk) ^ swz] : zero;
        hi[j] = x_ok[j] && has_hi ? xr[j][((ch + 1) * kVecsPerChunk) ^ swz] : zero;
      } else {
        lo[j] = x_ok[j] ? __ldg(xr[j] + ch * kVecsPerChunk) : zero;
        hi[j] = x_ok[j] && has_hi ? __ldg(xr[j] + (ch + 1) * kVecsPerChunk) : zero;
      }
    }
  };
  float acc[NT][4];
#pragma unroll
  for (int j = 0; j < NT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
  uint4 x0[NT], x1[NT];
  if (s.total > 0) load_x(0, x0, x1);
  int tile = s.tile0, step = 0, stage = 0;
  for (int q0 = 0; q0 < s.total; q0 += kGroup) {
    // Whole-line copies write slots other lanes read: every lane's reads of the stages refilled
    // now (consumed in the group before) are done before any lane's refill.
    if constexpr (kCfgs[V].lines) __syncwarp();
#pragma unroll
    for (int r = 0; r < kGroup; ++r) s.issue();
#pragma unroll
    for (int r = 0; r < kGroup; ++r) {
      if (q0 + r >= s.total) break;  // uniform over the warp
      ring_wait_at_most<kStages - 1>(kStages - 1 - r);  // this lane's copies of step q0 + r have landed
      if constexpr (kCfgs[V].lines) __syncwarp();     // ... and every lane's (they wrote this lane's slots)
      const uint4* st = s.ring + stage * kStageVecs + s.lane;
      const bool two = 2 * step + 1 < s.n_chunks;
      const uint4 l0 = st[0], h0 = st[32];
      const uint4 l1 = two ? st[64] : zero, h1 = two ? st[96] : zero;
      stage = stage + 1 == kStages ? 0 : stage + 1;
      uint4 y0[NT], y1[NT];  // the next step's x (past the last step: step 0's again, unused)
      load_x(step + 1 == s.n_steps ? 0 : step + 1, y0, y1);
      {
        const uint32_t a0[4] = {l0.x, h0.x, l0.y, h0.y};  // k 8c + {0..3}
        const uint32_t a1[4] = {l0.z, h0.z, l0.w, h0.w};  // k 8c + {4..7}
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          flash::mma_16816(acc[j], a0, x0[j].x, x0[j].y, T{});
          flash::mma_16816(acc[j], a1, x0[j].z, x0[j].w, T{});
        }
      }
      if (two) {
        const uint32_t a0[4] = {l1.x, h1.x, l1.y, h1.y};
        const uint32_t a1[4] = {l1.z, h1.z, l1.w, h1.w};
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          flash::mma_16816(acc[j], a0, x1[j].x, x1[j].y, T{});
          flash::mma_16816(acc[j], a1, x1[j].z, x1[j].w, T{});
        }
      }
#pragma unroll
      for (int j = 0; j < NT; ++j) x0[j] = y0[j], x1[j] = y1[j];
      if (++step == s.n_steps) {
        // C fragment: acc[j][i] is A row g + 8 (i / 2) against slot column 8j + 2c + (i % 2).
        const int f = tile * kOut<kGated> + g;
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
          for (int b = 0; b < 2; ++b) {
            const int i = 8 * j + 2 * c + b;
            if (i >= m) continue;
            T* o = a.out + int64_t(slots[i]) * a.out_stride;
            if constexpr (kGated) {
              const float gs = acc[j][b], up = acc[j][2 + b];
              o[f] = from_float<T>(gs / (1.f + expf(-gs)) * up);
            } else {
              o[f] = from_float<T>(acc[j][b]);
              o[f + 8] = from_float<T>(acc[j][2 + b]);
            }
          }
#pragma unroll
        for (int j = 0; j < NT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
        step = 0;
        ++tile;
      }
    }
  }
}

// Staged x (StreamCfg::x_rows): the x (gated: row slot / k) or act (row slot) rows of slots[0..m),
// m <= kRows, all of K, copied by the whole block into xs: row i's 16-byte vector col at
// i * n_vec + (col ^ x_swizzle(n_vec, i)). kStageUnroll loads a thread in flight (gate_up at 4
// slots: 1024 vectors, one round of 8 a thread). After the pdl wait (x / act are the previous
// kernels' outputs); the caller's barrier makes the rows visible.
constexpr int kStageUnroll = 8;
template <typename T, bool kGated>
__device__ __forceinline__ void stage_x(const SkinnyMoeArgs<T>& a, uint4* xs, const int* slots, int m) {
  const int n_vec = a.n_in / 8, total = m * n_vec;
  for (int base = int(threadIdx.x); base < total; base += kStageUnroll * kThreads) {
    uint4 v[kStageUnroll];
#pragma unroll
    for (int u = 0; u < kStageUnroll; ++u) {
      const int idx = base + u * kThreads, i = idx / n_vec, col = idx - i * n_vec;
      if (idx < total) {
        const int64_t row = kGated ? slots[i] / a.k : slots[i];
        v[u] = __ldg(reinterpret_cast<const uint4*>(a.in + row * a.in_stride) + col);
      }
    }
#pragma unroll
    for (int u = 0; u < kStageUnroll; ++u) {
      const int idx = base + u * kThreads, i = idx / n_vec, col = idx - i * n_vec;
      if (idx < total) xs[i * n_vec + (col ^ x_swizzle(n_vec, i))] = v[u];
    }
  }
}

// The folded combine, by the whole down block after its warps' outputs are written (every thread
// gets here: no thread left early). Each thread's expert_out stores are fenced before the block
// barrier, so once a count shows a token complete every block's outputs for it are visible (the
// threadFenceReduction pattern); the completing block re-reads them through L2 (__ldcg: L1 is not
// coherent) and adds out[i] += sum_j w_ij y_ij exactly as moe_combine_vec_kernel does. finished
// (the ring's shared memory, spent) holds the tokens this block completed.
template <typename T>
__device__ __forceinline__ void fused_combine(const SkinnyMoeArgs<T>& a, const int* list, int count, int* finished) {
  __shared__ int n_finished;
  if (threadIdx.x == 0) n_finished = 0;
  __threadfence();
  __syncthreads();
  const int target = a.k * int(gridDim.x);
  for (int t = threadIdx.x; t < count; t += kThreads) {
    const int tok = list[t] / a.k;
    if (atomicAdd(&a.counters[tok], 1) == target - 1) finished[atomicAdd(&n_finished, 1)] = tok;
  }
  __syncthreads();
  const int n_done = n_finished;
  if (n_done == 0) return;
  __threadfence();
  const int hidden = a.n_out, n_vec = hidden / 8;
  for (int it = threadIdx.x; it < n_done * n_vec; it += kThreads) {
    const int64_t i = finished[it / n_vec];
    const int v = it % n_vec;
    float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    for (int j = 0; j < a.k; ++j) {
      const float w = a.weights[i * a.k + j];
      float y[8];
      unpack_vec<T>(__ldcg(reinterpret_cast<const uint4*>(a.out + (i * a.k + j) * a.out_stride + v * 8)), y);
#pragma unroll
      for (int c = 0; c < 8; ++c) acc[c] += w * y[c];
    }
    T* o = a.comb_out + i * a.comb_stride + v * 8;
#pragma unroll
    for (int c = 0; c < 8; ++c) o[c] = from_float<T>(to_float(o[c]) + acc[c]);
  }
}

template <typename T, bool kGated, int V>
__global__ void __launch_bounds__(kThreads, kCfgs[V].min_blocks) moe_skinny_mma_stream_kernel(SkinnyMoeArgs<T> a) {
  // [ring_bytes<V>() / 16] rings, [x_stage_vecs(V, n_in)] staged x rows, then [n_slots] ints: the expert's slots
  extern __shared__ uint4 smem[];
  __shared__ int warp_count[kCollectUnroll][kWarps];
  __shared__ unsigned present[kMaxSkinnyWords];
  __shared__ int chosen;
  constexpr int kStages = kCfgs[V].stages, kXRows = kCfgs[V].x_rows;
  static_assert(kXRows == 0 || kXRows == 8 || kXRows == 8 * kMaxNT, "whole n-tiles of a pass staged");
  uint4* xs = smem + ring_bytes<V>() / 16;
  int* list = reinterpret_cast<int*>(xs + kXRows * (a.n_in / 8));  // x_stage_vecs(V, n_in): kCfgs is host data
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  constexpr int kT = kTilesPerWarp<kGated, V>;
  const int n_tiles = a.n_out / kOut<kGated>;
  // The block's (tile block, expert row): the grid's own coordinates, or with interleave (direct
  // grids only) the linear block id dealt round-robin over the experts.
  int bx = int(blockIdx.x), by = int(blockIdx.y);
  if (kCfgs[V].interleave && a.direct) {
    const int b = int(blockIdx.y) * int(gridDim.x) + int(blockIdx.x);
    by = b % int(gridDim.y);
    bx = b / int(gridDim.y);
  }
  const int tile0 = (bx * kWarps + warp) * kT;
  const int my_tiles = max(0, min(kT, n_tiles - tile0));
  Stream<T, kGated, V> s;
  s.ring = smem + warp * kStages * kStageVecs;
  s.n_in = a.n_in;
  s.n_out = a.n_out;
  s.n_chunks = a.n_in / kChunk;
  s.n_steps = (s.n_chunks + 1) / 2;
  s.tile0 = tile0;
  s.total = my_tiles * s.n_steps;
  s.lane = lane;
  s.g = lane >> 2;
  s.c = lane & 3;
  s.policy = 0;
  if constexpr ((kCfgs[V].hint & kHintEvictFirst) != 0) s.policy = evict_first_policy();
  auto weights_of = [&](int e) { return a.w + int64_t(e) * (kGated ? 2 : 1) * a.n_out * a.n_in; };
  // Direct grid: the expert is the block's row, so the ring fills before the PDL wait (the weights
  // never change; an empty expert, ~2% of them at 4 slots an expert, wastes its 8 KB a warp).
  if (a.direct) {
    s.w_e = weights_of(by);
    s.prologue();
  }
  pdl_begin();
  if constexpr (kGated) {  // the folded combine's counts start at 0 (down reads them after its PDL wait)
    if (a.counters != nullptr && blockIdx.x == 0 && blockIdx.y == 0)
      for (int i = threadIdx.x; i < a.n_tokens; i += kThreads) a.counters[i] = 0;
  }
  const int e = a.direct ? by : block_expert<kWarps>(true, present, &chosen, a.ids, a.n_slots, a.n_experts);
  if (e < 0) return;  // uniform: past the last expert with rows (compact grids; nothing issued)
  if (!a.direct) {
    s.w_e = weights_of(e);
    s.prologue();
  }
  const int count = collect_slots_unrolled(list, warp_count, a.ids, a.n_slots, a.n_experts, e);
  if constexpr (kXRows == 0) {
    // No block barrier in the passes: warps without tiles, or an expert without slots, skip them
    // (the folded combine's barriers below are met by every thread).
    if (count > 0 && my_tiles > 0) {
      for (int c0 = 0; c0 < count; c0 += kMaxNT * 8) {
        if (c0 > 0) {  // another 16 slots: the run again (from L2 where it stayed)
          s.restart();
          s.prologue();
        }
        const int m = min(kMaxNT * 8, count - c0);
        if (m <= 8) stream_pass<T, kGated, 1, V>(a, s, list + c0, m, xs);
        else stream_pass<T, kGated, 2, V>(a, s, list + c0, m, xs);
      }
    }
  } else {
    // Staged x: every thread stages and meets the barriers (count is uniform over the block), the
    // warps with tiles stream. The same 16-slot passes as above; a pass's rows are replaced only
    // after every warp is done reading them (the barrier before the next staging).
    for (int c0 = 0; c0 < count; c0 += kMaxNT * 8) {
      const int m = min(kMaxNT * 8, count - c0);
      if (c0 > 0) {
        if (my_tiles > 0) {  // the next pass's first steps in flight across the barrier and the staging
          s.restart();
          s.prologue();
        }
        __syncthreads();
      }
      stage_x<T, kGated>(a, xs, list + c0, min(m, kXRows));
      __syncthreads();
      if (my_tiles > 0) {
        if (m <= 8) stream_pass<T, kGated, 1, V>(a, s, list + c0, m, xs);
        else stream_pass<T, kGated, 2, V>(a, s, list + c0, m, xs);
      }
    }
  }
  ring_wait<0>();  // nothing may land in shared memory after the block is gone
  if constexpr (!kGated) {
    static_assert(ring_bytes<V>() >= size_t(kMaxSkinnySlots) * sizeof(int), "the ring holds the finished tokens");
    if (a.counters != nullptr) fused_combine(a, list, count, reinterpret_cast<int*>(smem));
  }
}

}  // namespace seam::cuda::skinny_stream_detail
