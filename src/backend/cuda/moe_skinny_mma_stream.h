// The skinny_mma path's products (moe_skinny_mma.h) rebuilt around the weights' stream: a warp
// owns whole weight tiles of one expert over all of K and pulls them through its own cp.async
// ring, several 2 KB steps in flight, so the bytes stream at the dense GEMV's rate instead of in
// short block-sized bursts between prologues and barriers.
//
// Why the first version streamed at ~2.4 TB/s (Qwen3-30B-A3B, 64 rows; CUPTI: gate_up 320 us a
// layer, down 178 us): its blocks are small (gate_up 64 KB, down 48 KB of weights), 12,288 and
// 8,192 of them, two resident an SM; each one pays a serial chain before and after its bytes (the
// slot scan: two barriers a 256-slot round; then, with 8 warps splitting K, each warp holds only
// 3 chunks = 3 KB and finishes in one or three load groups; then a barrier, the cross-warp sum
// in shared memory and another barrier), so an SM holds ~48 KB of weights in flight for part of
// each block's life and nothing during its prologue and epilogue.
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"
#include "core/tensor.h"

namespace seam::cuda {

// Where moe_skinny_mma_applies (hidden and inter multiples of 32, moe_skinny_applies).
bool moe_skinny_mma_stream_applies(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                                   const Tensor& topk_ids, const MoeScratch& s);

// Backend::moe_experts in three kernels, launch sizes set by n and the shapes alone (grid rows per
// expert as in moe_skinny.h: one per expert from 4 slots an expert, else the r-th expert with rows):
//   gate_up: block = 4 warps on one expert e; the block collects e's slots in slot order (a ballot
//            over topk_ids, 4 ids a thread in flight; none: it exits). Each warp owns one tile of
//            8 features: mma A rows = gate rows f0..f0+7 and up rows inter+f0.., over all of
//            hidden, streamed through a 5-stage per-warp cp.async ring (a step = 64 k of the 16
//            rows, whole 128-byte lines, 2 KB; 4 steps in flight a warp, ~160 KB an SM); the B
//            columns are up to 16 slots a pass (x[slot / k], from L1/L2). No cross-warp sum, no
//            barrier after the collection: act[slot][f] = silu(gate) * up, rounded to T, straight
//            from the accumulators (a lane holds gate and up of the same feature and slot).
//   down:    the same with 16 down rows a tile and two tiles a warp back to back in one ring
//            (24 KB each at inter 768); B = act[slot]; expert_out[slot][h], rounded to T;
//   combine: out[i] += sum_j w_ij expert_out[i * k + j] (moe_combine.h), j in order, as the CPU.
// With the direct grid the first ring steps are issued before the PDL wait (weights never change).
// Deterministic: fixed slot order, one mma accumulation chain a tile in k order.
void launch_moe_experts_skinny_mma_stream(const Tensor& out, const Tensor& x, const Tensor& w_gate_up,
                                          const Tensor& w_down, const Tensor& topk_ids, const Tensor& topk_weights,
                                          const MoeScratch& scratch, cudaStream_t stream, int variant = -1);

// The two products alone (which: 1 gate_up, 2 down, 3 both; no combine): for seam_kernel_bench.
void launch_moe_skinny_mma_stream_stages(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                                         const Tensor& topk_ids, const MoeScratch& scratch, int which,
                                         cudaStream_t stream, int variant = -1);

// Tuning variants (issue 23; the table and what each knob does: moe_stream_variants.cuh's
// StreamCfg): variant -1 in the launchers above means the switches, read once per process:
// gate_up in SEAM_MOE_STREAM_VARIANT (0, the default, is the kernel as first measured: 5 ring
// stages, one step issued at a time, 1 gate_up / 2 down tiles a warp, experts' blocks adjacent,
// no L2 hints), down in SEAM_MOE_STREAM_DOWN_VARIANT (default: the same as gate_up);
// 0..variants()-1 run both products in that variant (tests, seam_kernel_bench). Every variant
// computes the same bits. A variant that folds the combine into down (14-16, 20) does so only in
// launch_moe_experts_skinny_mma_stream and where scratch.index holds n int32 counts (it then
// launches no combine kernel); the stages launcher always leaves the combine out. A variant that
// stages x in shared memory (17-21: x_rows x K x 2 B a block) runs as variant 0 where that does
// not fit the device's shared memory.
int moe_skinny_mma_stream_variants();
const char* moe_skinny_mma_stream_variant_name(int variant);
int moe_skinny_mma_stream_variant();
int moe_skinny_mma_stream_down_variant();

}  // namespace seam::cuda
