// The mid-batch path of moe_experts ("skinny grouped"): per expert, its weights read once and
// multiplied with every row routed to it, as the dense skinny GEMM does for a few rows.
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"
#include "core/tensor.h"

namespace seam::cuda {

// Most row-expert slots the kernels take: each block collects its expert's slots in shared
// memory (4 bytes a slot).
constexpr int64_t kMaxSkinnySlots = 4096;

// Whether the skinny path can run: float16/bfloat16, the expert_out scratch given, hidden and
// inter multiples of 8, 16-byte aligned weights and rows, n * k <= kMaxSkinnySlots, at most 4096
// experts.
bool moe_skinny_applies(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down, const Tensor& topk_ids,
                        const MoeScratch& s);

// Backend::moe_experts in three kernels, launch sizes set by n and the shapes alone (a graph
// replays them for any routing; nothing is read back to the host, no grouping kernel runs):
// Grid rows: one per expert from 4 slots an expert on average (block_expert, moe_common.cuh),
// else min(n_experts, n * k), row r serving the r-th expert with rows (rows past the last exit):
// a few rows do not launch a block per empty expert.
//   gate_up: block (8 intermediate rows, expert e). The block first collects, in slot order, the
//            slots routed to e (a ballot over topk_ids: <= 4096 ids, from L2); with none it exits.
//            A warp streams gate_e[r] and up_e[r] once per chunk of up to 8 slots and writes
//            act[slot][r] = silu(gate . x[slot / k]) * (up . x[slot / k]) for each.
//   down:    block (32 output rows, expert e), the same collection; a warp streams 2 down rows of
//            e at a time (two such pairs) per chunk and writes expert_out[slot][h] = down_e[h] . act[slot], rounded to T;
//   combine: out[i] += sum_j w_ij expert_out[i * k + j] (moe_combine.h).
// At ~4 rows an expert (Qwen3-30B-A3B at 64 rows) each expert's weights are read once, where the
// gathered path reads them once per row. Deterministic: fixed slot order and sum order.
void launch_moe_experts_skinny(const Tensor& out, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                               const Tensor& topk_ids, const Tensor& topk_weights, const MoeScratch& scratch,
                               cudaStream_t stream);

}  // namespace seam::cuda
