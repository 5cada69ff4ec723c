#include "backend/cuda/moe_route.h"

#include <climits>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/diagnostic_switch.h"
#include "backend/cuda/moe_route_warp.cuh"

namespace seam::cuda {

namespace {

constexpr int kThreads = 128;
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
      if (pe == kRouteTaken) continue;
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
        p[bi] = kRouteTaken;
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


// One warp per row, the same numbers as moe_route_kernel: route_row_warp (moe_route_warp.cuh; the
// softmax sum's order differs: each lane's experts, then the warp). No shared memory and no
// barrier: a decode step's route is one warp's few microseconds instead of a 128-thread block's
// k rounds of two barriers.
constexpr int kRouteWarps = 4;  // rows per block

template <typename T, int P>
__global__ void __launch_bounds__(kRouteWarps * 32)
    moe_route_warp_kernel(int32_t* ids, float* weights, const T* logits, int64_t stride, int64_t n, int n_experts,
                          int k, bool renormalize) {
  pdl_begin();
  const int64_t row = int64_t(blockIdx.x) * kRouteWarps + (threadIdx.x >> 5);
  if (row >= n) return;  // whole warps: no shuffle below misses a lane
  const T* l = logits + row * stride;
  route_row_warp<P>(ids + row * k, weights + row * k, [&](int e) { return to_float(l[e]); }, n_experts, k,
                    renormalize);
}

// The warp kernel's instance for n_experts (P = experts per lane, a power of two up to 8), or
// false where the block kernel runs (more than 256 experts, k above 32, or SEAM_MOE_ROUTE_WARP=0).
template <typename T>
bool launch_route_warp(const Tensor& topk_ids, const Tensor& topk_weights, const Tensor& logits, bool renormalize,
                       cudaStream_t stream) {
  const int64_t n = logits.size(0);
  const int n_experts = int(logits.size(1)), k = int(topk_ids.size(1));
  if (!moe_route_warp_applies(n_experts, k)) return false;
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

bool moe_route_warp_applies(int64_t n_experts, int64_t k) {
  static const int on = env_choice("SEAM_MOE_ROUTE_WARP", 1, {0, 1});
  return on && k <= kMaxWarpRouteK && n_experts <= kMaxWarpRouteExperts;
}

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
