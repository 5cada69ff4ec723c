// The launch arguments of the skinny MoE expert kernels (moe_skinny_mma.cu and its streamed
// form moe_skinny_mma_stream.cu): one struct, passed by value, for both kernels of a pair
// (gate_up: gated, and down). Each kernel reads the fields it documents; the rest keep their
// defaults.
#pragma once
#include <cstdint>

#include "backend/cuda/moe_common.cuh"

namespace seam::cuda {

template <typename T>
struct SkinnyMoeArgs {
  T* out;             // act [n * k, inter] (gated) or expert_out [n * k, hidden]
  int64_t out_stride;
  const T* in;        // x [n, hidden] (gated: slot's row slot / k) or act [n * k, inter] (row = slot)
  int64_t in_stride;
  const T* w;         // w_gate_up [n_experts, 2 * inter, hidden] or w_down [n_experts, hidden, inter]
  const int32_t* ids; // topk_ids [n, k]
  int n_slots, n_experts, k;
  // inter (gated: features, a gate and an up row each) or hidden; the streamed kernel: a multiple
  // of 32, so every tile is whole.
  int n_out;
  int n_in;           // hidden or inter: a multiple of kChunk
  bool direct;        // grid row = expert (block_expert), else the row-th expert with rows
  // moe_skinny_mma_stream.cu: the combine folded into down (StreamCfg::fuse; null counters: not
  // folded). gate_up zeroes counters[0..n_tokens); down counts, per token, the (slot, block) pairs
  // done, and the block that completes a token's k x gridDim.x adds its weighted outputs to
  // comb_out as moe_combine does.
  int* counters = nullptr;
  int n_tokens = 0;
  T* comb_out = nullptr;
  int64_t comb_stride = 0;
  const float* weights = nullptr;
  // moe_skinny_mma.cu: TilePrefetch (moe_common.cuh); kPrefetchNone: each warp prefetches ahead
  // instead. The streamed kernel does not read it. Last, so the streamed kernel's parameters lie
  // where they did before the two structs were one.
  int prefetch = kPrefetchNone;
};

}  // namespace seam::cuda
