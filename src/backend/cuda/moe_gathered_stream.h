// The small-batch path of moe_experts, streaming: gathered GEMVs that read the chosen experts'
// rows at the dense GEMV's bandwidth (16-byte loads, a double-buffered sweep in flight per lane).
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"
#include "core/tensor.h"

namespace seam::cuda {

// At most this many experts a row (the down kernel stages the row's ids and weights in shared memory).
constexpr int kMaxStreamK = 64;

// Whether the streaming kernels run: float16/bfloat16, hidden and inter multiples of 8, 16-byte
// aligned weights and rows of x and scratch.act, k <= kMaxStreamK.
bool moe_gathered_stream_applies(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                                 const Tensor& topk_ids, const MoeScratch& s);

// Backend::moe_experts in two kernels, launch sizes set by n alone (graph-replayable):
//   gate_up: block (slot, 4 rows): a warp per intermediate row r streams gate_e[r] and up_e[r]
//            (e = ids[slot]) against x[slot / k] (L1-resident) and writes
//            act[slot][r] = silu(gate) * up, rounded to T;
//   down:    block (row i, 4 outputs): a warp per output h streams the k chosen experts' down rows
//            h as one flattened run of k * inter / 8 vectors (so the loads of every expert are in
//            flight together, not one expert's 3 per lane at a time) and adds
//            sum_j w_ij (down_e[h] . act[i * k + j]) to out[i][h] once.
// Deterministic: every sum has a fixed order (per lane, then the warp's butterfly).
void launch_moe_gathered_stream(const Tensor& out, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                                const Tensor& topk_ids, const Tensor& topk_weights, const MoeScratch& scratch,
                                cudaStream_t stream);

}  // namespace seam::cuda
