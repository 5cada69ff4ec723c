// One row's mixture-of-experts routing on one warp (the arithmetic of moe_route.cu's warp kernel):
// shared by that kernel and by the router GEMV's route tail (gemv.cu, GemvFusion::route), so the
// fused router + route writes the ids and weights moe_route writes, bit for bit.
#pragma once
#include <climits>
#include <cstdint>

#include "backend/cuda/cuda_common.cuh"

namespace seam::cuda {

// A taken expert's slot in the probabilities: below every rank (ranks are p in [0, 1], or -inf
// for a NaN p), so it is skipped by the tests below, never chosen twice.
constexpr float kRouteTaken = -2.f;
constexpr int kMaxWarpRouteK = 32;        // lane j keeps the j-th choice
constexpr int kMaxWarpRouteExperts = 256;  // 8 a lane

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

// The whole warp (all 32 lanes) routes one row: p = exp(l - max) / sum in float32 (the sum's
// order: each lane's experts, then the warp), k rounds of a warp argmax over the untaken experts
// (a NaN p ranks as -inf, lower ids first on ties), the chosen sum added in order j = 0..k-1.
// Lane l holds experts l, l + 32, ...: P of them (n_experts <= 32 P, k <= 32). load(e) returns
// logit e as a float. ids and weights: the row's k outputs.
template <int P, typename Load>
__device__ __forceinline__ void route_row_warp(int32_t* ids, float* weights, Load load, int n_experts, int k,
                                               bool renormalize) {
  const int lane = threadIdx.x & 31;
  float p[P];
  float mx = -INFINITY;
#pragma unroll
  for (int i = 0; i < P; ++i) {
    const int e = lane + 32 * i;
    p[i] = e < n_experts ? load(e) : -INFINITY;
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
  for (int i = 0; i < P; ++i) p[i] = lane + 32 * i < n_experts ? p[i] / sum : kRouteTaken;  // padding: never chosen
  float my_p = 0.f;
  int my_id = 0;
  for (int j = 0; j < k; ++j) {
    float bv = -INFINITY;
    int bi = INT_MAX;
#pragma unroll
    for (int i = 0; i < P; ++i) {
      const float pe = p[i];
      if (pe == kRouteTaken) continue;
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
        p[i] = kRouteTaken;
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
    ids[lane] = my_id;
    weights[lane] = renormalize ? my_p / s : my_p;
  }
}

// route_row_warp at the P for n_experts (<= kMaxWarpRouteExperts), the whole warp.
template <typename Load>
__device__ __forceinline__ void route_row_warp_any(int32_t* ids, float* weights, Load load, int n_experts, int k,
                                                   bool renormalize) {
  if (n_experts <= 32) route_row_warp<1>(ids, weights, load, n_experts, k, renormalize);
  else if (n_experts <= 64) route_row_warp<2>(ids, weights, load, n_experts, k, renormalize);
  else if (n_experts <= 128) route_row_warp<4>(ids, weights, load, n_experts, k, renormalize);
  else route_row_warp<8>(ids, weights, load, n_experts, k, renormalize);
}

}  // namespace seam::cuda
