#include "backend/cuda/moe_route.h"

#include <climits>

#include "backend/cuda/cuda_common.cuh"

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
    launch_kernel(moe_route_kernel<T>, dim3(unsigned(n)), dim3(kThreads), smem, stream, topk_ids.ptr<int32_t>(),
                  topk_weights.ptr<float>(), router_logits.ptr<T>(), router_logits.stride[0], n_experts, k,
                  renormalize);
  });
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace seam::cuda
