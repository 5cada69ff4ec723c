#include "backend/cuda/moe_experts_grouped.h"

#include <mma.h>

#include "backend/cuda/cuda_common.cuh"

namespace seam::cuda {

namespace {

using namespace nvcuda;

constexpr int kBM = 64, kBN = 64, kBK = 32;
constexpr int kLds = kBK + 8;      // shared row pitch of the operand tiles (80 bytes: wmma wants 32-byte tiles)
constexpr int kLdc = kBN + 4;      // shared row pitch of the float results
constexpr int kThreads = 128;      // 4 warps, 2 x 2, each 32 x 32 of the 64 x 64 tile

__device__ __forceinline__ int expert_of(const int32_t* ids, int64_t slot, int n_experts) {
  const int e = ids[slot];
  return e < 0 || e >= n_experts ? 0 : e;  // padded rows may carry anything
}

// index = [offsets (n_experts + 1) | tile starts (n_experts + 1) | sorted slots (n * k)].
__global__ void moe_align_kernel(int32_t* index, const int32_t* ids, int n_slots, int n_experts) {
  pdl_begin();
  extern __shared__ int counts[];  // [n_experts] counts, then [n_experts] cursors
  int* cursor = counts + n_experts;
  for (int e = threadIdx.x; e < n_experts; e += blockDim.x) counts[e] = 0;
  __syncthreads();
  for (int s = threadIdx.x; s < n_slots; s += blockDim.x) atomicAdd(&counts[expert_of(ids, s, n_experts)], 1);
  __syncthreads();
  int32_t* offsets = index;
  int32_t* tile_start = index + n_experts + 1;
  int32_t* sorted = index + 2 * n_experts + 2;
  if (threadIdx.x == 0) {
    int o = 0, t = 0;
    for (int e = 0; e < n_experts; ++e) {
      offsets[e] = o;
      tile_start[e] = t;
      cursor[e] = o;
      o += counts[e];
      t += (counts[e] + kBM - 1) / kBM;
    }
    offsets[n_experts] = o;
    tile_start[n_experts] = t;
  }
  __syncthreads();
  // The order inside an expert's group is arbitrary (atomics); every GEMM row is computed on its
  // own, so the results do not depend on it.
  for (int s = threadIdx.x; s < n_slots; s += blockDim.x)
    sorted[atomicAdd(&cursor[expert_of(ids, s, n_experts)], 1)] = s;
}

// The expert and rows [row0, row_end) of sorted positions that M-tile `tile` covers; false past the
// step's last tile. The last expert whose first tile is <= tile is the one (empty experts share
// their successor's start, so they are never it).
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
  row0 = offsets[e] + (tile - tile_start[e]) * kBM;
  row_end = offsets[e + 1];
  return true;
}

// 16 bytes of `src` into `dst`, or zeros.
template <typename T>
__device__ __forceinline__ void load16(T* dst, const T* src, bool valid) {
  *reinterpret_cast<uint4*>(dst) = valid ? *reinterpret_cast<const uint4*>(src) : make_uint4(0, 0, 0, 0);
}

// Shared memory of the gate_up kernel: the operand tiles, then (reusing them) the float results.
// Declared as raw bytes (a union of 16-bit CUDA types has no trivial constructor).
template <typename T>
struct GateUpIn {
  T a[kBM][kLds];
  T g[kBN][kLds];
  T u[kBN][kLds];
};
struct GateUpOut {
  float g[kBM][kLdc];
  float u[kBM][kLdc];
};

// act[pos][c] = silu(x_pos . gate_e[c]) * (x_pos . up_e[c]) for the tile's sorted positions pos
// (x row = the slot's token) and columns c in [blockIdx.y * 64, + 64).
template <typename T>
__global__ void __launch_bounds__(kThreads) moe_grouped_gate_up_kernel(T* act, int64_t act_stride, const T* x,
                                                                     int64_t x_stride, const T* w_gate_up,
                                                                     const int32_t* index, int n_experts, int k,
                                                                     int inter, int hidden) {
  pdl_begin();
  int e, row0, row_end;
  if (!find_tile(index, n_experts, blockIdx.x, e, row0, row_end)) return;
  const int32_t* sorted = index + 2 * n_experts + 2;
  const int c0 = blockIdx.y * kBN;
  constexpr size_t kSmem = sizeof(GateUpIn<T>) > sizeof(GateUpOut) ? sizeof(GateUpIn<T>) : sizeof(GateUpOut);
  __shared__ __align__(32) unsigned char smem[kSmem];
  auto& in = *reinterpret_cast<GateUpIn<T>*>(smem);
  auto& res = *reinterpret_cast<GateUpOut*>(smem);
  const int tid = threadIdx.x, warp = tid >> 5, wm = warp >> 1, wn = warp & 1;
  // Each thread loads 2 of the 256 16-byte vectors of each 64 x 32 operand tile: rows fixed per block.
  const T* a_src[2];
  const T* g_src[2];
  bool a_ok[2], b_ok[2];
  int r_of[2], v_of[2];
  for (int i = 0; i < 2; ++i) {
    const int v = tid + i * kThreads, r = v >> 2;
    r_of[i] = r;
    v_of[i] = (v & 3) * 8;
    const int pos = row0 + r;
    a_ok[i] = pos < row_end;
    a_src[i] = x + (a_ok[i] ? int64_t(sorted[pos] / k) * x_stride : 0);
    b_ok[i] = c0 + r < inter;
    g_src[i] = w_gate_up + (int64_t(e) * 2 * inter + (b_ok[i] ? c0 + r : 0)) * hidden;
  }
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> cg[2][2], cu[2][2];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      wmma::fill_fragment(cg[i][j], 0.f);
      wmma::fill_fragment(cu[i][j], 0.f);
    }
  for (int k0 = 0; k0 < hidden; k0 += kBK) {
    for (int i = 0; i < 2; ++i) {
      const int col = k0 + v_of[i];
      const bool in_k = col < hidden;
      load16(&in.a[r_of[i]][v_of[i]], a_src[i] + col, a_ok[i] && in_k);
      load16(&in.g[r_of[i]][v_of[i]], g_src[i] + col, b_ok[i] && in_k);
      load16(&in.u[r_of[i]][v_of[i]], g_src[i] + int64_t(inter) * hidden + col, b_ok[i] && in_k);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fg[2], fu[2];
      for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(fa[i], &in.a[wm * 32 + i * 16][kk], kLds);
      for (int j = 0; j < 2; ++j) {
        wmma::load_matrix_sync(fg[j], &in.g[wn * 32 + j * 16][kk], kLds);
        wmma::load_matrix_sync(fu[j], &in.u[wn * 32 + j * 16][kk], kLds);
      }
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) {
          wmma::mma_sync(cg[i][j], fa[i], fg[j], cg[i][j]);
          wmma::mma_sync(cu[i][j], fa[i], fu[j], cu[i][j]);
        }
    }
    __syncthreads();
  }
  // The results share the operands' shared memory: every warp is past its last mma (the barrier above).
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      wmma::store_matrix_sync(&res.g[wm * 32 + i * 16][wn * 32 + j * 16], cg[i][j], kLdc, wmma::mem_row_major);
      wmma::store_matrix_sync(&res.u[wm * 32 + i * 16][wn * 32 + j * 16], cu[i][j], kLdc, wmma::mem_row_major);
    }
  __syncthreads();
  for (int it = tid; it < kBM * kBN; it += kThreads) {
    const int r = it / kBN, c = it % kBN, pos = row0 + r, col = c0 + c;
    if (pos >= row_end || col >= inter) continue;
    const float g = res.g[r][c], u = res.u[r][c];
    act[int64_t(pos) * act_stride + col] = from_float<T>(g / (1.f + expf(-g)) * u);
  }
}

template <typename T>
struct DownIn {
  T a[kBM][kLds];
  T b[kBN][kLds];
};
struct DownOut {
  float c[kBM][kLdc];
};

// expert_out[slot][h] = act[pos] . down_e[h] for the tile's sorted positions pos (slot = sorted[pos])
// and columns h in [blockIdx.y * 64, + 64).
template <typename T>
__global__ void __launch_bounds__(kThreads) moe_grouped_down_kernel(T* expert_out, const T* act, int64_t act_stride,
                                                                  const T* w_down, const int32_t* index,
                                                                  int n_experts, int inter, int hidden) {
  pdl_begin();
  int e, row0, row_end;
  if (!find_tile(index, n_experts, blockIdx.x, e, row0, row_end)) return;
  const int32_t* sorted = index + 2 * n_experts + 2;
  const int c0 = blockIdx.y * kBN;
  constexpr size_t kSmem = sizeof(DownIn<T>) > sizeof(DownOut) ? sizeof(DownIn<T>) : sizeof(DownOut);
  __shared__ __align__(32) unsigned char smem[kSmem];
  auto& in = *reinterpret_cast<DownIn<T>*>(smem);
  auto& res = *reinterpret_cast<DownOut*>(smem);
  const int tid = threadIdx.x, warp = tid >> 5, wm = warp >> 1, wn = warp & 1;
  const T* a_src[2];
  const T* b_src[2];
  bool a_ok[2], b_ok[2];
  int r_of[2], v_of[2];
  for (int i = 0; i < 2; ++i) {
    const int v = tid + i * kThreads, r = v >> 2;
    r_of[i] = r;
    v_of[i] = (v & 3) * 8;
    a_ok[i] = row0 + r < row_end;
    a_src[i] = act + (a_ok[i] ? int64_t(row0 + r) * act_stride : 0);
    b_ok[i] = c0 + r < hidden;
    b_src[i] = w_down + (int64_t(e) * hidden + (b_ok[i] ? c0 + r : 0)) * inter;
  }
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.f);
  for (int k0 = 0; k0 < inter; k0 += kBK) {
    for (int i = 0; i < 2; ++i) {
      const int col = k0 + v_of[i];
      const bool in_k = col < inter;
      load16(&in.a[r_of[i]][v_of[i]], a_src[i] + col, a_ok[i] && in_k);
      load16(&in.b[r_of[i]][v_of[i]], b_src[i] + col, b_ok[i] && in_k);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb[2];
      for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(fa[i], &in.a[wm * 32 + i * 16][kk], kLds);
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(fb[j], &in.b[wn * 32 + j * 16][kk], kLds);
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
    __syncthreads();
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(&res.c[wm * 32 + i * 16][wn * 32 + j * 16], acc[i][j], kLdc, wmma::mem_row_major);
  __syncthreads();
  for (int it = tid; it < kBM * kBN; it += kThreads) {
    const int r = it / kBN, c = it % kBN, pos = row0 + r, h = c0 + c;
    if (pos >= row_end || h >= hidden) continue;
    expert_out[int64_t(sorted[pos]) * hidden + h] = from_float<T>(res.c[r][c]);
  }
}

// out[i][h] += sum_j w[i * k + j] * expert_out[i * k + j][h], j in order, in float32, rounded once.
template <typename T>
__global__ void moe_combine_kernel(T* out, int64_t out_stride, const T* expert_out, const float* weights, int64_t n,
                                   int k, int hidden) {
  pdl_begin();
  const int64_t n_items = n * hidden;
  for (int64_t it = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; it < n_items;
       it += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = it / hidden;
    const int h = int(it % hidden);
    float acc = 0.f;
    for (int j = 0; j < k; ++j) acc += weights[i * k + j] * to_float(expert_out[(i * k + j) * hidden + h]);
    T* o = out + i * out_stride + h;
    *o = from_float<T>(to_float(*o) + acc);
  }
}

template <typename T>
void launch_typed(const Tensor& out, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                  const Tensor& topk_ids, const Tensor& topk_weights, const MoeScratch& s, cudaStream_t stream) {
  const int64_t n = x.size(0);
  const int n_experts = int(w_gate_up.size(0)), inter = int(w_gate_up.size(1) / 2), hidden = int(w_gate_up.size(2));
  const int k = int(topk_ids.size(1)), n_slots = int(n * k);
  int32_t* index = s.index.ptr<int32_t>();
  launch_kernel(moe_align_kernel, dim3(1), dim3(1024), size_t(2 * n_experts) * sizeof(int), stream, index,
                topk_ids.ptr<int32_t>(), n_slots, n_experts);
  SEAM_CUDA_CHECK_LAUNCH();
  const unsigned max_tiles = div_up(n_slots, kBM) + unsigned(n_experts);
  launch_kernel(moe_grouped_gate_up_kernel<T>, dim3(max_tiles, div_up(inter, kBN)), dim3(kThreads), 0, stream,
                s.act.ptr<T>(), s.act.stride[0], x.ptr<T>(), x.stride[0], w_gate_up.ptr<T>(),
                static_cast<const int32_t*>(index), n_experts, k, inter, hidden);
  SEAM_CUDA_CHECK_LAUNCH();
  launch_kernel(moe_grouped_down_kernel<T>, dim3(max_tiles, div_up(hidden, kBN)), dim3(kThreads), 0, stream,
                s.expert_out.ptr<T>(), static_cast<const T*>(s.act.ptr<T>()), s.act.stride[0], w_down.ptr<T>(),
                static_cast<const int32_t*>(index), n_experts, inter, hidden);
  SEAM_CUDA_CHECK_LAUNCH();
  const unsigned blocks = unsigned(std::min<int64_t>(div_up(n * hidden, 256), 132 * 16));
  launch_kernel(moe_combine_kernel<T>, dim3(blocks), dim3(256), 0, stream, out.ptr<T>(), out.stride[0],
                static_cast<const T*>(s.expert_out.ptr<T>()), topk_weights.ptr<float>(), n, k, hidden);
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace

bool moe_grouped_applies(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down, const MoeScratch& s) {
  if (x.dtype != DType::f16 && x.dtype != DType::bf16) return false;
  if (!s.expert_out.defined() || !s.index.defined()) return false;
  const int64_t n_experts = w_gate_up.size(0), inter = w_gate_up.size(1) / 2, hidden = w_gate_up.size(2);
  return n_experts <= kMaxGroupedExperts && hidden % 8 == 0 && inter % 8 == 0 && rows_vectorizable(x, hidden) &&
         rows_vectorizable(s.act, inter) && aligned16(w_gate_up.data) && aligned16(w_down.data) &&
         aligned16(s.expert_out.data) &&
         inter <= int64_t(65535) * kBN && hidden <= int64_t(65535) * kBN;
}

void launch_moe_experts_grouped(const Tensor& out, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                                const Tensor& topk_ids, const Tensor& topk_weights, const MoeScratch& scratch,
                                cudaStream_t stream) {
  SEAM_ASSERT(moe_grouped_applies(x, w_gate_up, w_down, scratch));
  if (x.dtype == DType::bf16)
    launch_typed<__nv_bfloat16>(out, x, w_gate_up, w_down, topk_ids, topk_weights, scratch, stream);
  else
    launch_typed<__half>(out, x, w_gate_up, w_down, topk_ids, topk_weights, scratch, stream);
}

}  // namespace seam::cuda
