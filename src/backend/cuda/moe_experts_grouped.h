// The large-batch path of moe_experts: rows grouped by expert, then grouped GEMMs.
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"
#include "core/tensor.h"

namespace seam::cuda {

// Whether the grouped path can run: float16/bfloat16, the grouping scratch given (expert_out,
// index), hidden and inter multiples of 8, 16-byte aligned rows, at most kMaxGroupedExperts.
constexpr int kMaxGroupedExperts = 4096;
bool moe_grouped_applies(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down, const MoeScratch& s);

// Backend::moe_experts in four kernels, every one sized by n alone (a graph replays it for any
// routing; nothing is read back to the host):
//   align:   per-expert counts of the n * k (row, expert) slots, their offsets and M-tile starts,
//            and the slots sorted by expert (scratch.index = [offsets | tile starts | sorted]);
//   gate_up: a grouped GEMM over tiles of one expert's slots (x rows gathered), silu(gate) * up
//            in the epilogue, into scratch.act by sorted position (both GEMMs feed their wmma
//            tiles through a 3-stage cp.async pipeline; SEAM_MOE_GROUPED_PIPELINE=0, a diagnostic
//            switch, loads them one k-step at a time as before);
//   down:    a grouped GEMM of those rows with the expert's down, scattered to scratch.expert_out
//            by slot;
//   combine: out[i] += sum_j w_ij expert_out[i * k + j] (j in order, float32, added once;
//            moe_combine.h).
// The GEMMs launch the most tiles any routing can need (n * k / tile rows + n_experts); blocks
// past the step's tile count exit at once.
// The GEMMs run on one of these kernel families, same contract (inputs, scratch, outputs):
//   wmma:       this file's (mma.sync class, 64 x 64 tiles), every GPU;
//   wgmma:      Hopper warpgroup MMA (moe_grouped_wgmma.h), 128 rows x 256 B rows a block: an
//               sm_90a build on a CC 9.0 device;
//   wgmma_n128: the same, 128 x 128 tiles, two blocks an SM (an A/B alternative);
//   wgmma_persistent: the 128 x 256 tiles on one block an SM looping over them, a producer
//               warpgroup's cp.async running ahead into the next tile while two consumer
//               warpgroups multiply and store (moe_grouped_wgmma_persistent.h); same conditions.
//   wgmma_tma:  the persistent kernel with the weight tiles (and down's act tiles) copied by TMA;
//               also contiguous expert weights and a driver with cuTensorMapEncodeTiled.
// choose_grouped_kernel: wgmma_tma wherever it applies, else wgmma, else wmma; SEAM_MOE_GROUPED_WGMMA
// (a diagnostic switch) 0 keeps wmma, 1 wgmma, 2 wgmma_n128, 3 wgmma_persistent, 4 (default)
// wgmma_tma.
enum class GroupedKernel { wmma, wgmma, wgmma_n128, wgmma_persistent, wgmma_tma };
// The path's kernels, as bits (the kernel bench times the GEMMs apart; each needs the stages
// before it to have run on the same routing, with the same kernel family's align).
enum GroupedStages : int {
  kGroupedAlign = 1,
  kGroupedGateUp = 2,
  kGroupedDown = 4,
  kGroupedCombine = 8,
  kGroupedAll = 15,
};
const char* grouped_kernel_name(GroupedKernel kernel);
bool grouped_kernel_applies(GroupedKernel kernel, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                            const MoeScratch& s);
GroupedKernel choose_grouped_kernel(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                                    const MoeScratch& s);
void launch_moe_experts_grouped(const Tensor& out, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                                const Tensor& topk_ids, const Tensor& topk_weights, const MoeScratch& scratch,
                                cudaStream_t stream);
// One kernel family, whatever the switch says (tests, the kernel bench; seam::Error where it
// does not apply); `stages` picks kernels of the path (kGroupedAll: the whole op).
void launch_moe_experts_grouped_with(GroupedKernel kernel, const Tensor& out, const Tensor& x,
                                     const Tensor& w_gate_up, const Tensor& w_down, const Tensor& topk_ids,
                                     const Tensor& topk_weights, const MoeScratch& scratch, cudaStream_t stream,
                                     int stages = kGroupedAll);

// The grouping step alone (moe_align.cuh) into index [>= 2 n_experts + 2 + n k] from topk_ids
// [n, k], M-tiles of tile_rows (64: the wmma kernel's, 128: the wgmma kernels'); staged: the
// shared-memory form where it fits (its test, the kernel bench).
void launch_moe_align_index(const Tensor& index, const Tensor& topk_ids, int n_experts, int tile_rows, bool staged,
                            cudaStream_t stream);
// Whether the staged form takes n_slots slots of n_experts experts on this device (its shared
// memory fits); past it the launcher runs the global form.
bool moe_align_staged_fits(int64_t n_slots, int n_experts);

}  // namespace seam::cuda
