#include "backend/cuda/moe_route.h"

#include <climits>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/diagnostic_switch.h"

namespace seam::cuda {

namespace {

constexpr int kThreads = 128;
// A taken expert's slot in the shared probabilities: below every rank (ranks are p in [0, 1], or
// -inf for a NaN p), so it is skipped by the test below, never chosen twice.
constexpr float kTaken = -2.f;

// (value, id) argmax with lower ids first on ties, over a warp.
__device__ __forceinline__ void warp_argmax(float& v, int& id) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, o);
    const int oid = __shfl_xor_sync(0xffffffffu, id, o);
    if (ov > v || (ov == v && oid < id)) {
      v = ov;
      id = oid;
    }
  }
}

// One block per row, as the cpu reference computes it: p = exp(l - max) / sum in float32, then k
// rounds of a block argmax over the untaken experts (a NaN p ranks as -inf), then the optional
// renormalisation by the chosen sum.
template <typename T>
__global__ void moe_route_kernel(int32_t* ids, float* weights, const T* logits, int64_t stride, int n_experts, int k,
                                 bool renormalize) {
  pdl_begin();
  extern __shared__ float p[];  // [n_experts]
  __shared__ float scratch[32];
  __shared__ float warp_v[32];
  __shared__ int warp_id[32];
  __shared__ float chosen[64];  // this row's chosen p (k <= 64, checked on the host)
  const int64_t row = blockIdx.x;
  const T* l = logits + row * stride;
  float mx = -INFINITY;
  for (int e = threadIdx.x; e < n_experts; e += blockDim.x) {
    const float v = to_float(l[e]);
    p[e] = v;
    mx = fmaxf(mx, v);
  }
  mx = block_max(mx, scratch);
  float sum = 0.f;
  for (int e = threadIdx.x; e < n_experts; e += blockDim.x) {
    const float v = expf(p[e] - mx);
    p[e] = v;
    sum += v;
  }
  sum = block_sum(sum, scratch);
  for (int e = threadIdx.x; e < n_experts; e += blockDim.x) p[e] = p[e] / sum;
  __syncthreads();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
  for (int j = 0; j < k; ++j) {
    float bv = -INFINITY;
    int bi = INT_MAX;
    for (int e = threadIdx.x; e < n_experts; e += blockDim.x) {
      const float pe = p[e];
      if (pe == kTaken) continue;
      const float v = pe != pe ? -INFINITY : pe;
      if (v > bv || (v == bv && e < bi)) {
        bv = v;
        bi = e;
      }
    }
    warp_argmax(bv, bi);
    if (lane == 0) {
      warp_v[warp] = bv;
      warp_id[warp] = bi;
    }
    __syncthreads();
    if (warp == 0) {
      bv = lane < n_warps ? warp_v[lane] : -INFINITY;
      bi = lane < n_warps ? warp_id[lane] : INT_MAX;
      warp_argmax(bv, bi);
      if (lane == 0) {
        ids[row * k + j] = bi;
        chosen[j] = p[bi];
        p[bi] = kTaken;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    float s = 0.f;
    for (int j = 0; j < k; ++j) s += chosen[j];
    for (int j = 0; j < k; ++j) weights[row * k + j] = renormalize ? chosen[j] / s : chosen[j];
  }
}


// One warp per row, the same numbers as moe_route_kernel: p = exp(l - max) / sum in float32 (the
// sum's order differs: each lane's experts, then the warp), k rounds of a warp argmax over the
// untaken experts (a NaN p ranks as -inf, lower ids first on ties), the chosen sum added in
// order j = 0..k-1. Lane l holds experts l, l + 32, ...: P of them (n_experts <= 32 P). Lane j
// keeps the j-th choice (k <= 32). No shared memory and no barrier: a decode step's route is one
// warp's few microseconds instead of a 128-thread block's k rounds of two barriers.
constexpr int kRouteWarps = 4;  // rows per block
constexpr int kMaxWarpRouteK = 32;

template <typename T, int P>
__global__ void __launch_bounds__(kRouteWarps * 32)
    moe_route_warp_kernel(int32_t* ids, float* weights, const T* logits, int64_t stride, int64_t n, int n_experts,
                          int k, bool renormalize) {
  pdl_begin();
  const int lane = threadIdx.x & 31;
  const int64_t row = int64_t(blockIdx.x) * kRouteWarps + (threadIdx.x >> 5);
  if (row >= n) return;  // whole warps: no shuffle below misses a lane
  const T* l = logits + row * stride;
  float p[P];
  float mx = -INFINITY;
#pragma unroll
  for (int i = 0; i < P; ++i) {
    const int e = lane + 32 * i;
    p[i] = e < n_experts ? to_float(l[e]) : -INFINITY;
    mx = fmaxf(mx, p[i]);
  }
  mx = warp_max(mx);
  float sum = 0.f;
#pragma unroll
  for (int i = 0; i < P; ++i) {
    const int e = lane + 32 * i;
    if (e < n_experts) {
      p[i] = expf(p[i] - mx);
      sum += p[i];
    }
  }
  sum = warp_sum(sum);
#pragma unroll
  for (int i = 0; i < P; ++i) p[i] = lane + 32 * i < n_experts ? p[i] / sum : kTaken;  // padding: never chosen
  float my_p = 0.f;
  int my_id = 0;
  for (int j = 0; j < k; ++j) {
    float bv = -INFINITY;
    int bi = INT_MAX;
#pragma unroll
    for (int i = 0; i < P; ++i) {
      const float pe = p[i];
      if (pe == kTaken) continue;
      const float v = pe != pe ? -INFINITY : pe;
      const int e = lane + 32 * i;
      if (v > bv || (v == bv && e < bi)) {
        bv = v;
        bi = e;
      }
    }
    warp_argmax(bv, bi);  // every lane now holds the winner; k <= n_experts, so bi is a real expert
    float raw = 0.f;      // the winner's p as stored (NaN stays NaN, as the block kernel keeps it)
#pragma unroll
    for (int i = 0; i < P; ++i)
      if (lane + 32 * i == bi) {
        raw = p[i];
        p[i] = kTaken;
      }
    raw = __shfl_sync(0xffffffffu, raw, bi & 31);
    if (lane == j) {
      my_p = raw;
      my_id = bi;
    }
  }
  float s = 0.f;
  for (int j = 0; j < k; ++j) s += __shfl_sync(0xffffffffu, my_p, j);
  if (lane < k) {
    ids[row * k + lane] = my_id;
    weights[row * k + lane] = renormalize ? my_p / s : my_p;
  }
}

// The warp kernel's instance for n_experts (P = experts per lane, a power of two up to 8), or
// false where the block kernel runs (more than 256 experts, k above 32, or SEAM_MOE_ROUTE_WARP=0).
template <typename T>
bool launch_route_warp(const Tensor& topk_ids, const Tensor& topk_weights, const Tensor& logits, bool renormalize,
                       cudaStream_t stream) {
  static const int on = env_choice("SEAM_MOE_ROUTE_WARP", 1, {0, 1});
  const int64_t n = logits.size(0);
  const int n_experts = int(logits.size(1)), k = int(topk_ids.size(1));
  if (!on || k > kMaxWarpRouteK || n_experts > 256) return false;
  auto go = [&](auto kernel) {
    launch_kernel(kernel, dim3(div_up(n, kRouteWarps)), dim3(kRouteWarps * 32), 0, stream, topk_ids.ptr<int32_t>(),
                  topk_weights.ptr<float>(), logits.ptr<T>(), logits.stride[0], n, n_experts, k, renormalize);
  };
  if (n_experts <= 32) go(moe_route_warp_kernel<T, 1>);
  else if (n_experts <= 64) go(moe_route_warp_kernel<T, 2>);
  else if (n_experts <= 128) go(moe_route_warp_kernel<T, 4>);
  else go(moe_route_warp_kernel<T, 8>);
  return true;
}

}  // namespace

void launch_moe_route(const Tensor& topk_ids, const Tensor& topk_weights, const Tensor& router_logits,
                      bool renormalize, cudaStream_t stream) {
  const int64_t n = router_logits.size(0);
  const int n_experts = int(router_logits.size(1)), k = int(topk_ids.size(1));
  if (n == 0) return;
  SEAM_CHECK(n_experts <= kMaxRouteExperts && k <= 64, "moe_route: at most ", kMaxRouteExperts,
             " experts and k <= 64 on cuda (got ", n_experts, ", k = ", k, ")");
  const size_t smem = size_t(n_experts) * sizeof(float);
  SEAM_DISPATCH_FLOAT_TYPES(router_logits.dtype, T, "moe_route", [&] {
    if (launch_route_warp<T>(topk_ids, topk_weights, router_logits, renormalize, stream)) return;
    launch_kernel(moe_route_kernel<T>, dim3(unsigned(n)), dim3(kThreads), smem, stream, topk_ids.ptr<int32_t>(),
                  topk_weights.ptr<float>(), router_logits.ptr<T>(), router_logits.stride[0], n_experts, k,
                  renormalize);
  });
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace seam::cuda
