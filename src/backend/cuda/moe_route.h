// The mixture-of-experts router: softmax, top-k and renormalisation in one kernel.
#pragma once
#include <cuda_runtime.h>

#include "core/tensor.h"

namespace seam::cuda {
// Backend::moe_route: one warp per row for up to 256 experts and k <= 32 (SEAM_MOE_ROUTE_WARP=0,
// a diagnostic switch, keeps the block kernel), else one block per row; launch size fixed by n,
// so a graph replays it for any routing. router_logits [n, n_experts] (rows may be strided), topk_ids [n, k] i32,
// topk_weights [n, k] f32. n_experts <= kMaxRouteExperts.
constexpr int kMaxRouteExperts = 4096;
// Whether launch_moe_route routes rows of n_experts with top-k on the warp kernel (the arithmetic
// of route_row_warp, moe_route_warp.cuh, which the fused router GEMV's route tail shares).
bool moe_route_warp_applies(int64_t n_experts, int64_t k);
void launch_moe_route(const Tensor& topk_ids, const Tensor& topk_weights, const Tensor& router_logits,
                      bool renormalize, cudaStream_t stream);
}  // namespace seam::cuda
