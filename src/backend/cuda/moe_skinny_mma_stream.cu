// The fragment layout is moe_skinny_mma.cu's (skinny_gemm.cu's): within a 32-k chunk, lane
// (g = lane / 4, c = lane % 4) holds k [8c, 8c + 8) of A rows g and g + 8 and of B column g of
// each n-tile as one 16-byte vector each and feeds them to two m16n8k16 steps; the map from
// fragment k to memory k is the same for A and B, so each dot product is the exact sum of the
// right products in another order. A ring step is two such chunks (64 k): the 4 lanes of a quad
// copy a row's whole 128-byte line, and each lane reads back only the vectors it copied itself,
// so cp.async.wait_group alone orders them (no warp or block barrier in the loop).
#include "backend/cuda/moe_skinny_mma_stream.h"

#include <algorithm>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/flash_mma.cuh"
#include "backend/cuda/moe_combine.h"
#include "backend/cuda/moe_common.cuh"
#include "backend/cuda/moe_skinny.h"
#include "backend/cuda/moe_skinny_mma.h"

namespace seam::cuda {

namespace {

constexpr int kWarps = 4;            // a block: 4 warps on one expert, each its own tiles
constexpr int kThreads = kWarps * 32;
constexpr int kChunk = 32;           // k per chunk: two m16n8k16 steps
constexpr int kVecsPerChunk = 4;     // 16-byte vectors per row per chunk (one per lane of a quad)
constexpr int kStages = 5;           // ring steps a warp; kStages - 1 in flight (8 KB a warp)
constexpr int kStepVecs = 4;         // vectors a lane copies a step: rows lo and hi x 2 chunks
constexpr int kStageVecs = kStepVecs * 32;  // a warp's step: 2 KB
constexpr int kRingVecs = kWarps * kStages * kStageVecs;
constexpr size_t kRingBytes = size_t(kRingVecs) * 16;  // 40 KB a block
constexpr int kMaxNT = 2;            // n-tiles of 8 slots a pass over the weights
constexpr int kCollectUnroll = 4;    // topk_ids a thread has in flight while collecting

// cp.async.wait_group as a compiler barrier too ("memory"): the plain shared loads of the step
// that follow must not be hoisted above it (no warp barrier follows, unlike the flash kernels).
template <int N>
__device__ __forceinline__ void ring_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

template <bool kGated>
constexpr int kOut = kGated ? 8 : 16;  // output features a tile (gated: 8 gate + 8 up A rows)
template <bool kGated>
constexpr int kTilesPerWarp = kGated ? 1 : 2;  // down: 2 x 24 KB at inter 768, one run

template <typename T>
struct StreamArgs {
  T* out;             // act [n * k, inter] (gated) or expert_out [n * k, hidden]
  int64_t out_stride;
  const T* in;        // x [n, hidden] (gated: slot's row slot / k) or act [n * k, inter] (row = slot)
  int64_t in_stride;
  const T* w;         // w_gate_up [n_experts, 2 * inter, hidden] or w_down [n_experts, hidden, inter]
  const int32_t* ids; // topk_ids [n, k]
  int n_slots, n_experts, k;
  int n_out;          // inter or hidden: a multiple of 32, so every tile is whole
  int n_in;           // hidden or inter: a multiple of kChunk
  bool direct;        // grid row = expert, else the row-th expert with rows (block_expert)
};

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
template <typename T, bool kGated>
struct Stream {
  const T* w_e;
  uint4* ring;   // this warp's kStages x kStageVecs, lane-interleaved
  int n_in, n_out, n_chunks, n_steps, tile0, total;
  int lane, g, c;
  int issued = 0, tile = 0, step = 0, stage = 0;  // the next step to issue and its ring stage

  // The step `issued` of the warp's run into ring stage `stage`; always commits one group (maybe
  // empty) so wait_group counts stay in step with the consumer.
  __device__ __forceinline__ void issue() {
    if (issued < total) {
      const int f0 = (tile0 + tile) * kOut<kGated>;
      const int lo = f0 + g, hi = kGated ? n_out + f0 + g : f0 + g + 8;  // gate/up rows, or down rows g, g + 8
      const int64_t k0 = int64_t(step) * 2 * kChunk + 8 * c;
      const T* rlo = w_e + int64_t(lo) * n_in + k0;
      const T* rhi = w_e + int64_t(hi) * n_in + k0;
      uint4* st = ring + stage * kStageVecs + lane;
      flash::cp_async_16(st, rlo, true);
      flash::cp_async_16(st + 32, rhi, true);
      if (2 * step + 1 < n_chunks) {  // an odd chunk count leaves the tile's last step half
        flash::cp_async_16(st + 64, rlo + kChunk, true);
        flash::cp_async_16(st + 96, rhi + kChunk, true);
      }
      if (++step == n_steps) step = 0, ++tile;
      stage = stage + 1 == kStages ? 0 : stage + 1;
    }
    ++issued;
    flash::cp_async_commit();
  }
  __device__ __forceinline__ void restart() { issued = tile = step = stage = 0; }
  __device__ __forceinline__ void prologue() {
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) issue();
  }
};

// One pass of a warp over its whole run for slots[0..m) (m <= 8 NT), the ring's first
// kStages - 1 steps already issued: each tile's outputs written when its last step is summed.
// Slots past m read slot 0's row and are never written.
template <typename T, bool kGated, int NT>
__device__ __forceinline__ void stream_pass(const StreamArgs<T>& a, Stream<T, kGated>& s, const int* slots, int m) {
  const uint4 zero = make_uint4(0, 0, 0, 0);
  const int g = s.g, c = s.c;
  const uint4* xr[NT];
  bool x_ok[NT];
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int i = 8 * j + g;
    x_ok[j] = i < m;
    const int slot = slots[x_ok[j] ? i : 0];
    const int64_t row = kGated ? slot / a.k : slot;
    xr[j] = reinterpret_cast<const uint4*>(a.in + row * a.in_stride) + c;
  }
  // x (or act) vectors of a step's two chunks, loaded a step ahead: their L2 latency overlaps
  // the ring wait and the mma of the step before instead of adding to it. They depend on the
  // step's k alone (every tile multiplies the same slots).
  auto load_x = [&](int at_step, uint4 (&lo)[NT], uint4 (&hi)[NT]) {
    const int ch = 2 * at_step;
    const bool has_hi = ch + 1 < s.n_chunks;
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      lo[j] = x_ok[j] ? __ldg(xr[j] + ch * kVecsPerChunk) : zero;
      hi[j] = x_ok[j] && has_hi ? __ldg(xr[j] + (ch + 1) * kVecsPerChunk) : zero;
    }
  };
  float acc[NT][4];
#pragma unroll
  for (int j = 0; j < NT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
  uint4 x0[NT], x1[NT];
  if (s.total > 0) load_x(0, x0, x1);
  int tile = s.tile0, step = 0, stage = 0;
  for (int q = 0; q < s.total; ++q) {
    ring_wait<kStages - 2>();  // this lane's copies of step q have landed
    const uint4* st = s.ring + stage * kStageVecs + s.lane;
    const bool two = 2 * step + 1 < s.n_chunks;
    const uint4 l0 = st[0], h0 = st[32];
    const uint4 l1 = two ? st[64] : zero, h1 = two ? st[96] : zero;
    // Refill the stage read in the previous iteration: its registers are spent (the mma used them).
    s.issue();
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

template <typename T, bool kGated>
__global__ void __launch_bounds__(kThreads, 4) moe_skinny_mma_stream_kernel(StreamArgs<T> a) {
  extern __shared__ uint4 smem[];  // [kRingVecs] rings, then [n_slots] ints: the expert's slots
  __shared__ int warp_count[kCollectUnroll][kWarps];
  __shared__ unsigned present[kMaxSkinnyWords];
  __shared__ int chosen;
  int* list = reinterpret_cast<int*>(smem + kRingVecs);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  constexpr int kT = kTilesPerWarp<kGated>;
  const int n_tiles = a.n_out / kOut<kGated>;
  const int tile0 = (int(blockIdx.x) * kWarps + warp) * kT;
  const int my_tiles = max(0, min(kT, n_tiles - tile0));
  Stream<T, kGated> s;
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
  auto weights_of = [&](int e) { return a.w + int64_t(e) * (kGated ? 2 : 1) * a.n_out * a.n_in; };
  // Direct grid: the expert is blockIdx.y, so the ring fills before the PDL wait (the weights
  // never change; an empty expert, ~2% of them at 4 slots an expert, wastes its 8 KB a warp).
  if (a.direct) {
    s.w_e = weights_of(blockIdx.y);
    s.prologue();
  }
  pdl_begin();
  const int e = block_expert<kWarps>(!a.direct, present, &chosen, a.ids, a.n_slots, a.n_experts);
  if (e < 0) return;  // uniform: past the last expert with rows (compact grids; nothing issued)
  if (!a.direct) {
    s.w_e = weights_of(e);
    s.prologue();
  }
  const int count = collect_slots_unrolled(list, warp_count, a.ids, a.n_slots, a.n_experts, e);
  // No block barrier past this point: warps without tiles, or an expert without slots, leave.
  if (count > 0 && my_tiles > 0) {
    for (int c0 = 0; c0 < count; c0 += kMaxNT * 8) {
      if (c0 > 0) {  // another 16 slots: the run again (from L2 where it stayed)
        s.restart();
        s.prologue();
      }
      const int m = min(kMaxNT * 8, count - c0);
      if (m <= 8) stream_pass<T, kGated, 1>(a, s, list + c0, m);
      else stream_pass<T, kGated, 2>(a, s, list + c0, m);
    }
  }
  ring_wait<0>();  // nothing may land in shared memory after the block is gone
}

// Up to kMaxSkinnySlots slots (57 KB of shared memory a block), and the largest shared-memory
// carve-out: at 512 slots (43 KB a block, 96 registers a thread) 5 blocks an SM, 20 warps with
// 8 KB each in flight. What L1 is left holds the rows a block's 4 warps read in step; the rest
// of the x / act reads (~1/4 of the weight bytes at 4 slots an expert) are L2 hits.
template <typename T>
void set_smem_limit() {
  static const bool done = [] {  // once per instantiation, before any capture (host-side only)
    const int bytes = int(kRingBytes + size_t(kMaxSkinnySlots) * sizeof(int));
    for (auto* kernel : {moe_skinny_mma_stream_kernel<T, true>, moe_skinny_mma_stream_kernel<T, false>}) {
      SEAM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
      SEAM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                           int(cudaSharedmemCarveoutMaxShared)));
    }
    return true;
  }();
  (void)done;
}

template <typename T>
void launch_stages(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down, const Tensor& topk_ids,
                   const MoeScratch& s, int which, cudaStream_t stream) {
  set_smem_limit<T>();
  const int64_t n = x.size(0);
  const int n_experts = int(w_gate_up.size(0)), inter = int(w_gate_up.size(1) / 2), hidden = int(w_gate_up.size(2));
  const int k = int(topk_ids.size(1)), n_slots = int(n * k);
  const size_t smem = kRingBytes + size_t(n_slots) * sizeof(int);
  const bool direct = skinny_direct(n_slots, n_experts);
  const unsigned grid_rows = unsigned(direct ? n_experts : std::min(n_experts, n_slots));
  if (which & 1) {
    const StreamArgs<T> gate_up{s.act.ptr<T>(), s.act.stride[0], x.ptr<T>(), x.stride[0], w_gate_up.ptr<T>(),
                                topk_ids.ptr<int32_t>(), n_slots, n_experts, k, inter, hidden, direct};
    const int tiles = inter / kOut<true>;
    launch_kernel(moe_skinny_mma_stream_kernel<T, true>,
                  dim3(unsigned(div_up(tiles, kWarps * kTilesPerWarp<true>)), grid_rows), dim3(kThreads), smem,
                  stream, gate_up);
    SEAM_CUDA_CHECK_LAUNCH();
  }
  if (which & 2) {
    const StreamArgs<T> down{s.expert_out.ptr<T>(), hidden, s.act.ptr<T>(), s.act.stride[0], w_down.ptr<T>(),
                             topk_ids.ptr<int32_t>(), n_slots, n_experts, k, hidden, inter, direct};
    const int tiles = hidden / kOut<false>;
    launch_kernel(moe_skinny_mma_stream_kernel<T, false>,
                  dim3(unsigned(div_up(tiles, kWarps * kTilesPerWarp<false>)), grid_rows), dim3(kThreads), smem,
                  stream, down);
    SEAM_CUDA_CHECK_LAUNCH();
  }
}

void dispatch_stages(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down, const Tensor& topk_ids,
                     const MoeScratch& s, int which, cudaStream_t stream) {
  if (x.dtype == DType::bf16) launch_stages<__nv_bfloat16>(x, w_gate_up, w_down, topk_ids, s, which, stream);
  else launch_stages<__half>(x, w_gate_up, w_down, topk_ids, s, which, stream);
}

}  // namespace

bool moe_skinny_mma_stream_applies(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                                   const Tensor& topk_ids, const MoeScratch& s) {
  // Tiles of 8 (gated) and 16 (down) features: whole wherever inter and hidden are multiples of 32.
  return moe_skinny_mma_applies(x, w_gate_up, w_down, topk_ids, s) && w_gate_up.size(0) <= 65535;
}

void launch_moe_skinny_mma_stream_stages(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                                         const Tensor& topk_ids, const MoeScratch& scratch, int which,
                                         cudaStream_t stream) {
  SEAM_ASSERT(moe_skinny_mma_stream_applies(x, w_gate_up, w_down, topk_ids, scratch));
  if (x.size(0) == 0) return;
  dispatch_stages(x, w_gate_up, w_down, topk_ids, scratch, which, stream);
}

void launch_moe_experts_skinny_mma_stream(const Tensor& out, const Tensor& x, const Tensor& w_gate_up,
                                          const Tensor& w_down, const Tensor& topk_ids, const Tensor& topk_weights,
                                          const MoeScratch& scratch, cudaStream_t stream) {
  SEAM_ASSERT(moe_skinny_mma_stream_applies(x, w_gate_up, w_down, topk_ids, scratch));
  if (x.size(0) == 0) return;
  dispatch_stages(x, w_gate_up, w_down, topk_ids, scratch, 3, stream);
  launch_moe_combine(out, scratch.expert_out, topk_weights, stream);
}

}  // namespace seam::cuda
