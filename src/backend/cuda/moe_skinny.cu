#include "backend/cuda/moe_skinny.h"

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/moe_combine.h"
#include "backend/cuda/moe_common.cuh"

namespace seam::cuda {

namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kChunk = 8;      // slots multiplied per pass over the weights (more re-stream the rows, from L2)
constexpr int kGuUnroll = 2;   // gate_up: vectors per weight row per sweep and lane (x2 rows, x2 in flight)
constexpr int kDnRows = 2;     // down: output rows a warp streams together
constexpr int kDnGroups = 2;   // down: such row pairs per warp, one after the other (32 rows a block)
constexpr int kDnUnroll = 2;   // down: vectors per row per sweep and lane (x2 rows, x2 in flight)

// One warp: act[slots[i]][r] for i < m (m <= M), streaming gate row g and up row u once.
// Rows i >= m repeat slot m - 1 (a real row) and are not written.
template <typename T, int M>
__device__ __forceinline__ void gate_up_chunk(T* act, int64_t act_stride, const T* x, int64_t x_stride,
                                              const uint4* g, const uint4* u, int n_vec, const int* slots, int m,
                                              int k, int r, int lane) {
  // Rows as 32-bit vector offsets (registers: 8 pointers would spill); x_stride % 8 == 0 wherever
  // there is more than one row (moe_skinny_applies), and n * x_stride / 8 < 2^31.
  const uint4* xv = reinterpret_cast<const uint4*>(x);
  unsigned xo[M];
#pragma unroll
  for (int i = 0; i < M; ++i) xo[i] = unsigned(slots[i < m ? i : m - 1] / k) * unsigned(x_stride / 8);
  float ga[M], ua[M];
#pragma unroll
  for (int i = 0; i < M; ++i) ga[i] = ua[i] = 0.f;
  uint4 wg[kGuUnroll], wu[kGuUnroll];
  auto load_sweep = [&](int base) {
#pragma unroll
    for (int q = 0; q < kGuUnroll; ++q) {
      const int j = base + q * 32;
      const bool in = j < n_vec;
      wg[q] = in ? load_stream(g + j) : make_uint4(0, 0, 0, 0);
      wu[q] = in ? load_stream(u + j) : make_uint4(0, 0, 0, 0);
    }
  };
  load_sweep(lane);
  for (int base = lane; base < n_vec; base += 32 * kGuUnroll) {
    uint4 cg[kGuUnroll], cu[kGuUnroll];
#pragma unroll
    for (int q = 0; q < kGuUnroll; ++q) {
      cg[q] = wg[q];
      cu[q] = wu[q];
    }
    load_sweep(base + 32 * kGuUnroll);
#pragma unroll
    for (int q = 0; q < kGuUnroll; ++q) {
      const int j = base + q * 32;
      if (j >= n_vec) break;
      float gf[8], uf[8];
      unpack_vec<T>(cg[q], gf);
      unpack_vec<T>(cu[q], uf);
#pragma unroll
      for (int i = 0; i < M; ++i) {
        float xf[8];
        unpack_vec<T>(__ldg(xv + xo[i] + j), xf);
#pragma unroll
        for (int c = 0; c < 8; ++c) {
          ga[i] = fmaf(gf[c], xf[c], ga[i]);
          ua[i] = fmaf(uf[c], xf[c], ua[i]);
        }
      }
    }
  }
#pragma unroll
  for (int i = 0; i < M; ++i) {
    const float gs = warp_sum(ga[i]), us = warp_sum(ua[i]);
    if (lane == i && i < m) act[int64_t(slots[i]) * act_stride + r] = from_float<T>(gs / (1.f + expf(-gs)) * us);
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads, 2)
    moe_skinny_gate_up_kernel(T* act, int64_t act_stride, const T* x, int64_t x_stride, const T* w_gate_up,
                              const int32_t* ids, int n_slots, int n_experts, int k, int inter, int hidden,
                              int prefetch, bool direct) {
  extern __shared__ int list[];  // [n_slots]: this expert's slots
  __shared__ int warp_count[kWarps];
  __shared__ unsigned present[kMaxSkinnyWords];
  __shared__ int chosen;
  auto prefetch_tile = [&](int e) {  // the tile's gate and up rows (below inter) into L2 at once
    const int r0 = blockIdx.x * kWarps, n_rows = min(kWarps, inter - r0);
    const T* g0 = w_gate_up + (int64_t(e) * 2 * inter + r0) * hidden;
    prefetch_l2(g0, int64_t(n_rows) * hidden * int64_t(sizeof(T)));
    prefetch_l2(g0 + int64_t(inter) * hidden, int64_t(n_rows) * hidden * int64_t(sizeof(T)));
  };
  if (prefetch == kPrefetchEarly) prefetch_tile(blockIdx.y);  // direct grids: before the PDL wait
  pdl_begin();
  const int e = block_expert<kWarps>(!direct, present, &chosen, ids, n_slots, n_experts);
  if (e < 0) return;  // uniform: past the last expert with rows
  const int count = collect_slots<kWarps>(list, warp_count, ids, n_slots, n_experts, e);
  if (count == 0) return;  // uniform; after the last barrier
  if (prefetch == kPrefetchLate) prefetch_tile(e);
  const int lane = threadIdx.x & 31, r = blockIdx.x * kWarps + (threadIdx.x >> 5);
  if (r >= inter) return;
  const int n_vec = hidden / 8;
  const uint4* g = reinterpret_cast<const uint4*>(w_gate_up + (int64_t(e) * 2 * inter + r) * hidden);
  const uint4* u = g + int64_t(inter) * n_vec;
  for (int c0 = 0; c0 < count; c0 += kChunk) {
    const int m = min(kChunk, count - c0);
    const int* s = list + c0;
    if (m == 1) gate_up_chunk<T, 1>(act, act_stride, x, x_stride, g, u, n_vec, s, m, k, r, lane);
    else if (m == 2) gate_up_chunk<T, 2>(act, act_stride, x, x_stride, g, u, n_vec, s, m, k, r, lane);
    else if (m <= 4) gate_up_chunk<T, 4>(act, act_stride, x, x_stride, g, u, n_vec, s, m, k, r, lane);
    else gate_up_chunk<T, 8>(act, act_stride, x, x_stride, g, u, n_vec, s, m, k, r, lane);
  }
}

// One warp: y[slots[i]][h0 + q] = down_e[h0 + q] . act[slots[i]] for i < m, q < kDnRows with
// h0 + q < hidden, streaming the rows once. Rows past hidden re-read row h0 (not written).
template <typename T, int M>
__device__ __forceinline__ void down_chunk(T* y, int64_t y_stride, const T* act, int64_t act_stride, const T* w_e,
                                           int h0, int hidden, int inter, const int* slots, int m, int lane) {
  const int n_vec = inter / 8;
  const uint4* wr[kDnRows];
#pragma unroll
  for (int q = 0; q < kDnRows; ++q)
    wr[q] = reinterpret_cast<const uint4*>(w_e + int64_t(h0 + q < hidden ? h0 + q : h0) * inter);
  const uint4* av = reinterpret_cast<const uint4*>(act);  // rows as vector offsets, as in gate_up_chunk
  unsigned ao[M];
#pragma unroll
  for (int i = 0; i < M; ++i) ao[i] = unsigned(slots[i < m ? i : m - 1]) * unsigned(act_stride / 8);
  float acc[kDnRows][M];
#pragma unroll
  for (int q = 0; q < kDnRows; ++q)
#pragma unroll
    for (int i = 0; i < M; ++i) acc[q][i] = 0.f;
  uint4 wv[kDnRows][kDnUnroll];
  auto load_sweep = [&](int base) {
#pragma unroll
    for (int v = 0; v < kDnUnroll; ++v) {
      const int j = base + v * 32;
#pragma unroll
      for (int q = 0; q < kDnRows; ++q) wv[q][v] = j < n_vec ? load_stream(wr[q] + j) : make_uint4(0, 0, 0, 0);
    }
  };
  load_sweep(lane);
  for (int base = lane; base < n_vec; base += 32 * kDnUnroll) {
    uint4 cur[kDnRows][kDnUnroll];
#pragma unroll
    for (int q = 0; q < kDnRows; ++q)
#pragma unroll
      for (int v = 0; v < kDnUnroll; ++v) cur[q][v] = wv[q][v];
    load_sweep(base + 32 * kDnUnroll);
#pragma unroll
    for (int v = 0; v < kDnUnroll; ++v) {
      const int j = base + v * 32;
      if (j >= n_vec) break;
      float wf[kDnRows][8];
#pragma unroll
      for (int q = 0; q < kDnRows; ++q) unpack_vec<T>(cur[q][v], wf[q]);
#pragma unroll
      for (int i = 0; i < M; ++i) {
        float af[8];
        unpack_vec<T>(__ldg(av + ao[i] + j), af);
#pragma unroll
        for (int q = 0; q < kDnRows; ++q)
#pragma unroll
          for (int c = 0; c < 8; ++c) acc[q][i] = fmaf(wf[q][c], af[c], acc[q][i]);
      }
    }
  }
#pragma unroll
  for (int q = 0; q < kDnRows; ++q)
#pragma unroll
    for (int i = 0; i < M; ++i) {
      const float s = warp_sum(acc[q][i]);
      if (lane == q * M + i && i < m && h0 + q < hidden)
        y[int64_t(slots[i]) * y_stride + h0 + q] = from_float<T>(s);
    }
}

template <typename T>
__global__ void __launch_bounds__(kThreads, 2)
    moe_skinny_down_kernel(T* y, const T* act, int64_t act_stride, const T* w_down, const int32_t* ids, int n_slots,
                           int n_experts, int inter, int hidden, int prefetch, bool direct) {
  extern __shared__ int list[];  // [n_slots]
  __shared__ int warp_count[kWarps];
  __shared__ unsigned present[kMaxSkinnyWords];
  __shared__ int chosen;
  auto prefetch_tile = [&](const T* w_e) {  // the tile's down rows (below hidden) into L2 at once
    constexpr int kTileRows = kWarps * kDnRows * kDnGroups;
    const int h_begin = blockIdx.x * kTileRows, n_rows = min(kTileRows, hidden - h_begin);
    prefetch_l2(w_e + int64_t(h_begin) * inter, int64_t(n_rows) * inter * int64_t(sizeof(T)));
  };
  if (prefetch == kPrefetchEarly) prefetch_tile(w_down + int64_t(blockIdx.y) * hidden * inter);  // direct grids
  pdl_begin();
  const int e = block_expert<kWarps>(!direct, present, &chosen, ids, n_slots, n_experts);
  if (e < 0) return;  // uniform: past the last expert with rows
  const int count = collect_slots<kWarps>(list, warp_count, ids, n_slots, n_experts, e);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (count == 0) return;  // after the last barrier
  const T* w_e = w_down + int64_t(e) * hidden * inter;
  if (prefetch == kPrefetchLate) prefetch_tile(w_e);
  for (int grp = 0; grp < kDnGroups; ++grp) {
    const int h0 = ((blockIdx.x * kDnGroups + grp) * kWarps + warp) * kDnRows;
    if (h0 >= hidden) return;
    for (int c0 = 0; c0 < count; c0 += kChunk) {
      const int m = min(kChunk, count - c0);
      const int* s = list + c0;
      if (m == 1) down_chunk<T, 1>(y, hidden, act, act_stride, w_e, h0, hidden, inter, s, m, lane);
      else if (m == 2) down_chunk<T, 2>(y, hidden, act, act_stride, w_e, h0, hidden, inter, s, m, lane);
      else if (m <= 4) down_chunk<T, 4>(y, hidden, act, act_stride, w_e, h0, hidden, inter, s, m, lane);
      else down_chunk<T, 8>(y, hidden, act, act_stride, w_e, h0, hidden, inter, s, m, lane);
    }
  }
}

template <typename T>
void launch_typed(const Tensor& out, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                  const Tensor& topk_ids, const Tensor& topk_weights, const MoeScratch& s, cudaStream_t stream) {
  const int64_t n = x.size(0);
  const int n_experts = int(w_gate_up.size(0)), inter = int(w_gate_up.size(1) / 2), hidden = int(w_gate_up.size(2));
  const int k = int(topk_ids.size(1)), n_slots = int(n * k);
  const size_t smem = size_t(n_slots) * sizeof(int);
  const bool direct = skinny_direct(n_slots, n_experts);
  const unsigned grid_rows = unsigned(direct ? n_experts : std::min(n_experts, n_slots));
  const int64_t gu_tile = int64_t(2) * kWarps * hidden * int64_t(sizeof(T));
  const int64_t dn_tile = int64_t(kWarps) * kDnRows * kDnGroups * inter * int64_t(sizeof(T));
  launch_kernel(moe_skinny_gate_up_kernel<T>, dim3(div_up(inter, kWarps), grid_rows), dim3(kThreads), smem,
                stream, s.act.ptr<T>(), s.act.stride[0], x.ptr<T>(), x.stride[0], w_gate_up.ptr<T>(),
                topk_ids.ptr<int32_t>(), n_slots, n_experts, k, inter, hidden,
                int(tile_prefetch(gu_tile, n_slots, n_experts)), direct);
  SEAM_CUDA_CHECK_LAUNCH();
  launch_kernel(moe_skinny_down_kernel<T>, dim3(div_up(hidden, kWarps * kDnRows * kDnGroups), grid_rows),
                dim3(kThreads), smem, stream, s.expert_out.ptr<T>(), static_cast<const T*>(s.act.ptr<T>()),
                s.act.stride[0], w_down.ptr<T>(), topk_ids.ptr<int32_t>(), n_slots, n_experts, inter, hidden,
                int(tile_prefetch(dn_tile, n_slots, n_experts)), direct);
  SEAM_CUDA_CHECK_LAUNCH();
  launch_moe_combine(out, s.expert_out, topk_weights, stream);
}

}  // namespace

bool moe_skinny_applies(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down, const Tensor& topk_ids,
                        const MoeScratch& s) {
  if (x.dtype != DType::f16 && x.dtype != DType::bf16) return false;
  if (!s.expert_out.defined()) return false;
  const int64_t n_experts = w_gate_up.size(0), inter = w_gate_up.size(1) / 2, hidden = w_gate_up.size(2);
  return x.size(0) * topk_ids.size(1) <= kMaxSkinnySlots && n_experts <= int64_t(kMaxSkinnyWords) * 32 &&
         x.size(0) * x.stride[0] < (int64_t(1) << 31) && x.size(0) * topk_ids.size(1) * s.act.stride[0] < (int64_t(1) << 31) && hidden % 8 == 0 &&
         inter % 8 == 0 && rows_vectorizable(x, hidden) && rows_vectorizable(s.act, inter) &&
         aligned16(w_gate_up.data) && aligned16(w_down.data) && aligned16(s.expert_out.data) &&
         inter <= int64_t(65535) * kWarps && hidden <= int64_t(65535) * kWarps * kDnRows * kDnGroups;
}

void launch_moe_experts_skinny(const Tensor& out, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                               const Tensor& topk_ids, const Tensor& topk_weights, const MoeScratch& scratch,
                               cudaStream_t stream) {
  SEAM_ASSERT(moe_skinny_applies(x, w_gate_up, w_down, topk_ids, scratch));
  if (x.size(0) == 0) return;
  if (x.dtype == DType::bf16)
    launch_typed<__nv_bfloat16>(out, x, w_gate_up, w_down, topk_ids, topk_weights, scratch, stream);
  else
    launch_typed<__half>(out, x, w_gate_up, w_down, topk_ids, topk_weights, scratch, stream);
}

}  // namespace seam::cuda
