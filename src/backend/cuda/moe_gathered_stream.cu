#include "backend/cuda/moe_gathered_stream.h"

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/moe_common.cuh"

namespace seam::cuda {

namespace {

constexpr int kGuWarps = 4;   // gate_up: intermediate rows per block, one warp each (92 registers: 5 blocks an SM)
constexpr int kGuUnroll = 4;  // gate_up: 16-byte vectors per weight row per sweep and lane
constexpr int kDnWarps = 4;   // down: outputs per block, one warp each (more, smaller blocks: 512 at hidden 2048)
constexpr int kDnUnroll = 8;  // down: 16-byte vectors per sweep and lane

// Block (slot, tile). Each lane holds its next sweep of both rows in flight (2 * kGuUnroll
// vectors) while it multiplies the current one: 20 resident warps an SM (92 registers) hold
// ~160 KB in flight per SM, far above what HBM's latency needs.
template <typename T>
__global__ void __launch_bounds__(kGuWarps * 32)
    moe_gate_up_stream_kernel(T* act, int64_t act_stride, const T* x, int64_t x_stride, const T* w_gate_up,
                              const int32_t* ids, int n_experts, int k, int inter, int hidden) {
  pdl_begin();
  const int64_t slot = blockIdx.x;
  const int lane = threadIdx.x & 31, r = blockIdx.y * kGuWarps + (threadIdx.x >> 5);
  if (r >= inter) return;  // no barrier below
  const int e = expert_of(ids, slot, n_experts);
  const int n_vec = hidden / 8;
  const uint4* g = reinterpret_cast<const uint4*>(w_gate_up + (int64_t(e) * 2 * inter + r) * hidden);
  const uint4* u = g + int64_t(inter) * n_vec;
  const uint4* xv = reinterpret_cast<const uint4*>(x + (slot / k) * x_stride);
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
  float gs = 0.f, us = 0.f;
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
      float xf[8], gf[8], uf[8];
      unpack_vec<T>(__ldg(xv + j), xf);
      unpack_vec<T>(cg[q], gf);
      unpack_vec<T>(cu[q], uf);
#pragma unroll
      for (int c = 0; c < 8; ++c) {
        gs = fmaf(gf[c], xf[c], gs);
        us = fmaf(uf[c], xf[c], us);
      }
    }
  }
  gs = warp_sum(gs);
  us = warp_sum(us);
  if (lane == 0) act[slot * act_stride + r] = from_float<T>(gs / (1.f + expf(-gs)) * us);
}

// Block (row i, tile). Vector t of a warp's flattened run is expert j = t / n_vec's column
// vector c = t % n_vec; each lane's dot of it is weighted by w_ij and summed in t order.
template <typename T>
__global__ void __launch_bounds__(kDnWarps * 32)
    moe_down_stream_kernel(T* out, int64_t out_stride, const T* act, int64_t act_stride, const T* w_down,
                           const int32_t* ids, const float* weights, int n_experts, int k, int inter, int hidden) {
  pdl_begin();
  __shared__ int e_of[kMaxStreamK];
  __shared__ float w_of[kMaxStreamK];
  const int64_t row = blockIdx.x;
  for (int j = threadIdx.x; j < k; j += blockDim.x) {
    e_of[j] = expert_of(ids, row * k + j, n_experts);
    w_of[j] = weights[row * k + j];
  }
  __syncthreads();
  const int lane = threadIdx.x & 31, h = blockIdx.y * kDnWarps + (threadIdx.x >> 5);
  if (h >= hidden) return;  // after the only barrier
  const int n_vec = inter / 8, total = k * n_vec;
  const uint4* a_row = reinterpret_cast<const uint4*>(act + row * k * act_stride);
  const int64_t a_vecs = act_stride / 8;  // act rows are 16-byte aligned (moe_gathered_stream_applies)
  auto w_ptr = [&](int t) {
    const int j = t / n_vec;
    return reinterpret_cast<const uint4*>(w_down + (int64_t(e_of[j]) * hidden + h) * inter) + (t - j * n_vec);
  };
  uint4 wv[kDnUnroll];
  auto load_sweep = [&](int base) {
#pragma unroll
    for (int q = 0; q < kDnUnroll; ++q) {
      const int t = base + q * 32;
      wv[q] = t < total ? load_stream(w_ptr(t)) : make_uint4(0, 0, 0, 0);
    }
  };
  load_sweep(lane);
  float acc = 0.f;
  for (int base = lane; base < total; base += 32 * kDnUnroll) {
    uint4 cur[kDnUnroll];
#pragma unroll
    for (int q = 0; q < kDnUnroll; ++q) cur[q] = wv[q];
    load_sweep(base + 32 * kDnUnroll);
#pragma unroll
    for (int q = 0; q < kDnUnroll; ++q) {
      const int t = base + q * 32;
      if (t >= total) break;
      const int j = t / n_vec, c = t - j * n_vec;
      float df[8], af[8];
      unpack_vec<T>(cur[q], df);
      unpack_vec<T>(__ldg(a_row + j * a_vecs + c), af);
      float y = 0.f;
#pragma unroll
      for (int i = 0; i < 8; ++i) y = fmaf(df[i], af[i], y);
      acc = fmaf(w_of[j], y, acc);
    }
  }
  acc = warp_sum(acc);
  if (lane == 0) {
    T* o = out + row * out_stride + h;
    *o = from_float<T>(to_float(*o) + acc);
  }
}

template <typename T>
void launch_typed(const Tensor& out, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                  const Tensor& topk_ids, const Tensor& topk_weights, const Tensor& act, cudaStream_t stream) {
  const int64_t n = x.size(0);
  const int n_experts = int(w_gate_up.size(0)), inter = int(w_gate_up.size(1) / 2), hidden = int(w_gate_up.size(2));
  const int k = int(topk_ids.size(1));
  launch_kernel(moe_gate_up_stream_kernel<T>, dim3(unsigned(n * k), div_up(inter, kGuWarps)), dim3(kGuWarps * 32), 0,
                stream, act.ptr<T>(), act.stride[0], x.ptr<T>(), x.stride[0], w_gate_up.ptr<T>(),
                topk_ids.ptr<int32_t>(), n_experts, k, inter, hidden);
  SEAM_CUDA_CHECK_LAUNCH();
  launch_kernel(moe_down_stream_kernel<T>, dim3(unsigned(n), div_up(hidden, kDnWarps)), dim3(kDnWarps * 32), 0,
                stream, out.ptr<T>(), out.stride[0], static_cast<const T*>(act.ptr<T>()), act.stride[0],
                w_down.ptr<T>(), topk_ids.ptr<int32_t>(), topk_weights.ptr<float>(), n_experts, k, inter, hidden);
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace

bool moe_gathered_stream_applies(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                                 const Tensor& topk_ids, const MoeScratch& s) {
  if (x.dtype != DType::f16 && x.dtype != DType::bf16) return false;
  const int64_t inter = w_gate_up.size(1) / 2, hidden = w_gate_up.size(2);
  return topk_ids.size(1) <= kMaxStreamK && hidden % 8 == 0 && inter % 8 == 0 && rows_vectorizable(x, hidden) &&
         rows_vectorizable(s.act, inter) && aligned16(w_gate_up.data) && aligned16(w_down.data) &&
         inter <= int64_t(65535) * kGuWarps && hidden <= int64_t(65535) * kDnWarps &&
         int64_t(x.size(0)) * topk_ids.size(1) <= INT32_MAX && int64_t(topk_ids.size(1)) * inter <= INT32_MAX;
}

void launch_moe_gathered_stream(const Tensor& out, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                                const Tensor& topk_ids, const Tensor& topk_weights, const MoeScratch& scratch,
                                cudaStream_t stream) {
  SEAM_ASSERT(moe_gathered_stream_applies(x, w_gate_up, w_down, topk_ids, scratch));
  if (x.size(0) == 0) return;
  if (x.dtype == DType::bf16)
    launch_typed<__nv_bfloat16>(out, x, w_gate_up, w_down, topk_ids, topk_weights, scratch.act, stream);
  else
    launch_typed<__half>(out, x, w_gate_up, w_down, topk_ids, topk_weights, scratch.act, stream);
}

}  // namespace seam::cuda
