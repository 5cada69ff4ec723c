// The mixture-of-experts feed-forward: the chosen experts' SiLU MLPs, weighted and summed.
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"
#include "core/tensor.h"

namespace seam::cuda {
// Backend::moe_experts, by one of six paths; every one reads the ids from device memory with
// launch sizes set by n and the shapes alone, so a graph replays it for any routing:
//   gathered:        gathered GEMVs (llama.cpp's mul_mat_id manner), any dtype and width: each
//                    (row, chosen expert) pair reads only its expert's rows. Two kernels:
//                    act[i*k+j] = silu(gate_e x_i) * up_e x_i; then out[i] += sum_j w_ij down_e
//                    act[i*k+j] (j in order, float32, added once). hidden <= kMaxExpertHidden
//                    (x staged in shared memory as float32).
//   gathered_stream: the same two products with 16-byte streamed weights (moe_gathered_stream.h).
//   gathered_gemv:   the same products on the dense decode GEMV's kernel, expert-indexed (its
//                    GLU for gate_up, its plain/paired rows for down into float32), then the
//                    j-ordered weighted combine (moe_gathered_gemv.h).
//   skinny:          per expert, its weights read once for all its rows (moe_skinny.h).
//   skinny_mma:      the same on tensor cores (moe_skinny_mma.h; hidden, inter multiples of 32).
//   skinny_mma_stream: the same products with each warp streaming whole weight tiles through a
//                    cp.async ring (moe_skinny_mma_stream.h; where skinny_mma applies).
//   grouped:         rows grouped by expert, then grouped GEMMs (moe_experts_grouped.h): wgmma on
//                    an sm_90a build and a CC 9.0 GPU (moe_grouped_wgmma.h), wmma elsewhere.
// The rule (choose_moe_path): one row -> gathered_gemv where it applies (16-bit), else
// gathered_stream where an expert's gate/up is at most kStreamMaxExpertBytes, else gathered; up to SEAM_MOE_SKINNY (default 4) slots an expert on average -> skinny_mma_stream
// (else skinny); more -> grouped.
// Diagnostic switches: SEAM_MOE_GROUPED 0 never groups, 1 the rule (default), 2 grouped wherever
// it applies; SEAM_MOE_SKINNY 0 turns the skinny path off (then grouped from 256 slots, the rule
// before it), N its limit in slots an expert; SEAM_MOE_GATHER_STREAM 0 keeps the plain gathered
// kernels; SEAM_MOE_SKINNY_MMA 2 (default) the streamed tensor-core skinny kernels, 1 the first
// tensor-core version (skinny_mma), 0 the skinny path on CUDA cores; SEAM_MOE_GATHER_GEMV 0
// keeps one row off the GEMV path (the gathered kernels, as before it), 1 takes it only for
// experts above kStreamMaxExpertBytes, 2 (default) wherever it applies.
constexpr int kMaxExpertHidden = 12288;
// Arrival counters a path may fold its combine with (the backend's: zeroed once, every launch
// leaves them zero, no two launches at once): gathered_gemv's down GEMV then adds the weighted
// sum to out in its last block per output tile (GemvExpertsCombine, gemv_experts.h) instead of a
// moe_combine launch. None (the default, and the backend's unless SEAM_MOE_FUSED_COMBINE=1):
// every path combines as before.
struct MoeTickets {
  unsigned* counters = nullptr;
  int64_t n = 0;
};
enum class MoePath { gathered, gathered_stream, gathered_gemv, skinny, skinny_mma, skinny_mma_stream, grouped };
const char* moe_path_name(MoePath p);
bool moe_path_applies(MoePath p, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                      const Tensor& topk_ids, const MoeScratch& scratch);
MoePath choose_moe_path(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down, const Tensor& topk_ids,
                        const MoeScratch& scratch);
// One path, whatever the rule says (tests; seam::Error where it does not apply).
void launch_moe_experts_path(MoePath path, const Tensor& out, const Tensor& x, const Tensor& w_gate_up,
                             const Tensor& w_down, const Tensor& topk_ids, const Tensor& topk_weights,
                             const MoeScratch& scratch, cudaStream_t stream, const MoeTickets& tickets = {});
void launch_moe_experts(const Tensor& out, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                        const Tensor& topk_ids, const Tensor& topk_weights, const MoeScratch& scratch,
                        cudaStream_t stream, const MoeTickets& tickets = {});
}  // namespace seam::cuda
