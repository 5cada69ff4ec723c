// The fragment layout is skinny_gemm.cu's (read its header): within a 32-k chunk, lane
// (g = lane / 4, c = lane % 4) loads k [8c, 8c + 8) of A rows g and g + 8 and of B column g of
// each n-tile as one 16-byte vector each, and feeds them to two m16n8k16 steps; the map from
// fragment k to memory k is the same for A and B and a permutation of the chunk, so each dot
// product is the exact sum of the right products in another order.
#include "backend/cuda/moe_skinny_mma.h"

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/flash_mma.cuh"
#include "backend/cuda/moe_combine.h"
#include "backend/cuda/moe_common.cuh"
#include "backend/cuda/moe_skinny.h"
#include "backend/cuda/moe_skinny_args.cuh"

namespace seam::cuda {

namespace {

constexpr int kWarps = 8;         // K slices per block
constexpr int kThreads = kWarps * 32;
constexpr int kARows = 16;        // the mma's A rows: 8 gate + 8 up rows, or 16 down rows
constexpr int kChunk = 32;        // k per chunk: two m16n8k16 steps
constexpr int kVecsPerChunk = 4;  // 16-byte vectors per row per chunk (one per lane of a quad)
constexpr int kUnroll = 3;        // chunks of weight loads in flight per warp (4 would spill at 2 blocks an SM)
constexpr int kMaxNT = 2;         // n-tiles of 8 slots per pass over the weights
constexpr int kAheadChunks = 3 * kUnroll;  // kPrefetchNone: a warp's L2 prefetch distance (~9 KB a warp in flight)

// One pass of a warp over its K slice for slots[0..m) (m <= 8 NT): the partial dot products into
// part[x row][A row]. Slots past m read slot 0's row and are never written.
template <typename T, bool kGated, int NT>
__device__ __forceinline__ void mma_pass(const SkinnyMoeArgs<T>& a, const int* slots, int m, const uint4* w_lo,
                                         const uint4* w_hi, int c_begin, int c_end, float (*part)[kARows + 1],
                                         int g, int c) {
  const uint4 zero = make_uint4(0, 0, 0, 0);
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
  uint4 wl[kUnroll], wh[kUnroll];
  auto load_w = [&](int ch) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const bool in = ch + u < c_end;
      wl[u] = in ? load_stream(w_lo + (ch + u) * kVecsPerChunk) : zero;
      wh[u] = in ? load_stream(w_hi + (ch + u) * kVecsPerChunk) : zero;
    }
  };
  load_w(c_begin);
  if (a.prefetch == kPrefetchNone)  // the chunks between the first group and the loop's first prefetch
    for (int pc = c_begin + kUnroll; pc < min(c_end, c_begin + kAheadChunks); ++pc) {
      prefetch_l2_line(w_lo + pc * kVecsPerChunk);
      prefetch_l2_line(w_hi + pc * kVecsPerChunk);
    }
  float acc[NT][4];
#pragma unroll
  for (int j = 0; j < NT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
  for (int ch = c_begin; ch < c_end; ch += kUnroll) {
    uint4 cl[kUnroll], chh[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) cl[u] = wl[u], chh[u] = wh[u];
    if (ch + kUnroll < c_end) load_w(ch + kUnroll);  // the next group's weights in flight during this group's math
    if (a.prefetch == kPrefetchNone) {  // a large tile: L2 lines kAheadChunks ahead of the registers
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int pc = ch + kAheadChunks + u;
        if (pc < c_end) {
          prefetch_l2_line(w_lo + pc * kVecsPerChunk);
          prefetch_l2_line(w_hi + pc * kVecsPerChunk);
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (ch + u >= c_end) break;
      // x (or act) from L1/L2 one chunk at a time: registers go to the weights in flight.
      uint4 xv[NT];
#pragma unroll
      for (int j = 0; j < NT; ++j) xv[j] = x_ok[j] ? __ldg(xr[j] + (ch + u) * kVecsPerChunk) : zero;
      const uint32_t a0[4] = {cl[u].x, chh[u].x, cl[u].y, chh[u].y};  // step 0: k 8c + {0..3}
      const uint32_t a1[4] = {cl[u].z, chh[u].z, cl[u].w, chh[u].w};  // step 1: k 8c + {4..7}
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        flash::mma_16816(acc[j], a0, xv[j].x, xv[j].y, T{});
        flash::mma_16816(acc[j], a1, xv[j].z, xv[j].w, T{});
      }
    }
  }
  // C fragment: acc[j][i] is A row g + 8 (i / 2) against x row 8j + 2c + (i % 2).
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int i = 0; i < 4; ++i) part[8 * j + 2 * c + (i & 1)][g + 8 * (i >> 1)] = acc[j][i];
}

// kTiles feature tiles a block, one after the other (down: 2, so a block streams 48 KB at
// Qwen3-30B-A3B's inter 768 and its slot collection is amortised over twice the bytes).
template <bool kGated>
constexpr int kTiles = kGated ? 1 : 2;
template <bool kGated>
constexpr int kOut = kGated ? kARows / 2 : kARows;  // output features a tile

template <typename T, bool kGated>
__global__ void __launch_bounds__(kThreads, 2) moe_skinny_mma_kernel(SkinnyMoeArgs<T> a) {
  extern __shared__ int list[];  // [n_slots]: this expert's slots
  __shared__ int warp_count[kWarps];
  __shared__ unsigned present[kMaxSkinnyWords];
  __shared__ int chosen;
  __shared__ float part[kWarps][kMaxNT * 8][kARows + 1];  // each warp's sums: [warp][slot][A row]
  constexpr int kF = kOut<kGated>;
  const int f_block = blockIdx.x * kTiles<kGated> * kF;  // the block's first feature (< n_out: the grid)
  auto weights_of = [&](int e) { return a.w + int64_t(e) * (kGated ? 2 : 1) * a.n_out * a.n_in; };
  // The block's weight rows (those below n_out: gate and up rows, or the down rows of its tiles)
  // into L2 at once, all in flight where the registers hold one group of K-steps a warp. With many
  // rows (nearly every expert hit) before the PDL wait: weights never change, so this overlaps the
  // previous kernel's tail; else once the expert is known to have rows; blocks too large for L2
  // (kPrefetchNone) are prefetched by each warp kAheadChunks ahead of its loads (mma_pass).
  auto prefetch_block = [&](const T* w_e) {
    const int64_t rows = min(kTiles<kGated> * kF, a.n_out - f_block);  // gated: of each part
    const int64_t bytes = rows * a.n_in * int64_t(sizeof(T));
    prefetch_l2(w_e + int64_t(f_block) * a.n_in, bytes);
    if constexpr (kGated) prefetch_l2(w_e + int64_t(a.n_out + f_block) * a.n_in, bytes);
  };
  if (a.prefetch == kPrefetchEarly) prefetch_block(weights_of(blockIdx.y));  // direct grids only
  pdl_begin();
  const int e = block_expert<kWarps>(!a.direct, present, &chosen, a.ids, a.n_slots, a.n_experts);
  if (e < 0) return;  // uniform: past the last expert with rows
  const int count = collect_slots<kWarps>(list, warp_count, a.ids, a.n_slots, a.n_experts, e);
  if (count == 0) return;  // uniform over the block
  const T* w_e = weights_of(e);
  if (a.prefetch == kPrefetchLate) prefetch_block(w_e);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, c = lane & 3;
  const int n_chunks = a.n_in / kChunk;
  const int per_warp = (n_chunks + kWarps - 1) / kWarps;
  const int c_begin = min(n_chunks, warp * per_warp), c_end = min(n_chunks, c_begin + per_warp);
  for (int t = 0; t < kTiles<kGated>; ++t) {
    const int f0 = f_block + t * kF;
    if (f0 >= a.n_out) break;  // uniform over the block
    // A rows g and g + 8: gated, gate row f0 + g and up row n_out + f0 + g; else rows f0 + g and
    // f0 + g + 8. Rows past n_out read row 0 and are never written.
    int lo, hi;
    if constexpr (kGated) {
      lo = f0 + g < a.n_out ? f0 + g : 0;
      hi = a.n_out + lo;
    } else {
      lo = f0 + g < a.n_out ? f0 + g : 0;
      hi = f0 + g + 8 < a.n_out ? f0 + g + 8 : 0;
    }
    const uint4* w_lo = reinterpret_cast<const uint4*>(w_e + int64_t(lo) * a.n_in) + c;
    const uint4* w_hi = reinterpret_cast<const uint4*>(w_e + int64_t(hi) * a.n_in) + c;
    for (int c0 = 0; c0 < count; c0 += kMaxNT * 8) {  // uniform: the barriers below are met by all
      const int m = min(kMaxNT * 8, count - c0);
      const int* slots = list + c0;
      if (m <= 8) mma_pass<T, kGated, 1>(a, slots, m, w_lo, w_hi, c_begin, c_end, part[warp], g, c);
      else mma_pass<T, kGated, 2>(a, slots, m, w_lo, w_hi, c_begin, c_end, part[warp], g, c);
      __syncthreads();
      for (int idx = threadIdx.x; idx < m * kF; idx += kThreads) {
        const int r = idx / kF, f = idx % kF, feature = f0 + f;
        if (feature >= a.n_out) continue;
        float s = 0.f, up = 0.f;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) {
          s += part[w][r][f];
          if constexpr (kGated) up += part[w][r][f + 8];
        }
        const int64_t at = int64_t(slots[r]) * a.out_stride + feature;
        if constexpr (kGated) a.out[at] = from_float<T>(s / (1.f + expf(-s)) * up);
        else a.out[at] = from_float<T>(s);
      }
      __syncthreads();  // part is rewritten by the next pass
    }
  }
}

// The two products (which: 1 gate_up, 2 down, 3 both); the combine is the caller's.
template <typename T>
void launch_products(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down, const Tensor& topk_ids,
                     const MoeScratch& s, int which, cudaStream_t stream) {
  const int64_t n = x.size(0);
  const int n_experts = int(w_gate_up.size(0)), inter = int(w_gate_up.size(1) / 2), hidden = int(w_gate_up.size(2));
  const int k = int(topk_ids.size(1)), n_slots = int(n * k);
  const size_t smem = size_t(n_slots) * sizeof(int);
  // A block's weight bytes: gated 8 gate + 8 up rows of hidden, down kTiles x 16 rows of inter.
  const bool direct = skinny_direct(n_slots, n_experts);
  const unsigned grid_rows = unsigned(direct ? n_experts : std::min(n_experts, n_slots));
  const int gu_prefetch = tile_prefetch(int64_t(kARows) * hidden * int64_t(sizeof(T)), n_slots, n_experts);
  const int dn_prefetch =
      tile_prefetch(int64_t(kTiles<false> * kARows) * inter * int64_t(sizeof(T)), n_slots, n_experts);
  SkinnyMoeArgs<T> gate_up{s.act.ptr<T>(), s.act.stride[0], x.ptr<T>(), x.stride[0], w_gate_up.ptr<T>(),
                           topk_ids.ptr<int32_t>(), n_slots, n_experts, k, inter, hidden, direct};
  gate_up.prefetch = gu_prefetch;
  if (which & 1) {
    launch_kernel(moe_skinny_mma_kernel<T, true>, dim3(div_up(inter, kOut<true>), grid_rows), dim3(kThreads),
                  smem, stream, gate_up);
    SEAM_CUDA_CHECK_LAUNCH();
  }
  SkinnyMoeArgs<T> down{s.expert_out.ptr<T>(), hidden, s.act.ptr<T>(), s.act.stride[0], w_down.ptr<T>(),
                        topk_ids.ptr<int32_t>(), n_slots, n_experts, k, hidden, inter, direct};
  down.prefetch = dn_prefetch;
  if (which & 2) {
    launch_kernel(moe_skinny_mma_kernel<T, false>, dim3(div_up(hidden, kTiles<false> * kOut<false>), grid_rows),
                  dim3(kThreads), smem, stream, down);
    SEAM_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace

bool moe_skinny_mma_applies(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down, const Tensor& topk_ids,
                            const MoeScratch& s) {
  const int64_t inter = w_gate_up.size(1) / 2, hidden = w_gate_up.size(2);
  return moe_skinny_applies(x, w_gate_up, w_down, topk_ids, s) && hidden % kChunk == 0 && inter % kChunk == 0 &&
         inter <= int64_t(65535) * (kARows / 2) && hidden <= int64_t(65535) * kARows;
}

void launch_moe_experts_skinny_mma(const Tensor& out, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                                   const Tensor& topk_ids, const Tensor& topk_weights, const MoeScratch& scratch,
                                   cudaStream_t stream) {
  SEAM_ASSERT(moe_skinny_mma_applies(x, w_gate_up, w_down, topk_ids, scratch));
  if (x.size(0) == 0) return;
  launch_moe_skinny_mma_stages(x, w_gate_up, w_down, topk_ids, scratch, 3, stream);
  launch_moe_combine(out, scratch.expert_out, topk_weights, stream);
}

void launch_moe_skinny_mma_stages(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                                  const Tensor& topk_ids, const MoeScratch& scratch, int which, cudaStream_t stream) {
  SEAM_ASSERT(moe_skinny_mma_applies(x, w_gate_up, w_down, topk_ids, scratch));
  if (x.size(0) == 0) return;
  if (x.dtype == DType::bf16)
    launch_products<__nv_bfloat16>(x, w_gate_up, w_down, topk_ids, scratch, which, stream);
  else
    launch_products<__half>(x, w_gate_up, w_down, topk_ids, scratch, which, stream);
}

}  // namespace seam::cuda
