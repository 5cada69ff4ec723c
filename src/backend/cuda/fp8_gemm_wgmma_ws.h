// The FP8 product (backend.h "FP8 linear", the product half) on Hopper's FP8 tensor cores with
// the scales in the kernel, warp-specialised: fp8_gemm_wgmma.h's arithmetic (the same promotion
// of every 128-wide K block's partial into float32, the same epilogue and single rounding), fed
// by a TMA producer warp through a ring of mbarrier-guarded stages instead of every thread's
// cp.async and a block barrier per K block; persistent (a block an SM). The prefill kernel
// (128 x 256 or 128 x 128 tiles); the one-block kernel (fp8_gemm_wgmma.h) stays for its narrower
// tiles and as the A/B reference.
// Tests: tests/cuda/cuda_fp8_gemm_wgmma_test.cpp (every case of the old kernel runs on this one).
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"

namespace seam::cuda {

// Whether launch_fp8_gemm_wgmma_ws takes this product: fp8_gemm_wgmma_applies (an sm_90a build on
// a CC 9.0 GPU, K % 128 == 0, N % 8 == 0, contiguous 16-byte-aligned codes, f32/f16/bf16 out)
// and the TMA descriptors' limits (rows and K below 2^31), and the driver's
// cuTensorMapEncodeTiled was found.
bool fp8_gemm_wgmma_ws_applies(const Tensor& out, const Tensor& codes, const Fp8Weight& w);

// As launch_fp8_gemm_wgmma (same operands, same results up to the tensor cores' in-block
// alignment, which both kernels share: bit-equal on exactly representable values). Graph-
// capturable: the two tensor maps are encoded on the host at every launch (no device memory,
// no synchronisation) and travel as kernel parameters. tile_cols: the outputs of a tile, 128 or
// 256; 0 (callers) the SEAM_FP8_WS_TILE_N switch (128 or 256, default 256); the tests and the
// bench name one.
// How a tile's float32 sums are formed from the FP8 tensor cores' products.
//  promoted: each 128-wide K block's wgmmas go into a fresh partial, which CUDA cores add into the
//    sums (DeepGEMM's promotion: inside an MMA, Hopper's FP8 tensor cores keep a reduced, ~13-14-bit
//    mantissa, so accumulating a long K there loses low bits at every step, truncated, not rounded).
//  fast: the tensor cores accumulate the whole K in the sums (CUTLASS's FP8FastAccum schedules,
//    what vLLM's per-tensor / per-channel FP8 GEMMs run on Hopper): no partials, no promotion, each
//    warpgroup keeps a K block queued. Per-tensor / per-channel weights only; block-scaled weights
//    change scale every 128 k and are always promoted.
//  by_switch: SEAM_FP8_ACCUM (fast | promoted; default fast). Measured on the H200 (docs/performance.md,
//    twenty-first pass): FP8 prefill of 4,096 tokens +6.6 %, a 512 + 64 mixed step -5.6 %, the model
//    parity of per-channel and per-tensor checkpoints within the same bounds as promoted.
//    The kernel's tests bound fast by the promoted bound times K / 128 (each K block truncates
//    against at most the row's magnitude) and hold its exact values bit-exact.
enum class Fp8WsAccum { by_switch, promoted, fast };
Fp8WsAccum fp8_gemm_wgmma_ws_accum(Fp8WsAccum accum);

void launch_fp8_gemm_wgmma_ws(const Tensor& out, const Tensor& codes, const Tensor& act_scales, const Fp8Weight& w,
                              const Tensor& bias, bool accumulate, cudaStream_t stream, int tile_cols = 0,
                              Fp8WsAccum accum = Fp8WsAccum::by_switch, int cluster = 0);

// The gated MLP's product with its activation in the epilogue: act [n, inter] = f(gate) * up, where
// [gate | up] = x @ dequant(w)^T, w [2 inter, K] (no bias). A tile pairs 128 gate rows with the
// matching 128 up rows (two TMA boxes a stage), so the [n, 2 inter] product is never written; each
// of gate and up is rounded to act's dtype before f(gate) * up, as the plain product's epilogue and
// gated_act.cu round them, so act equals launch_fp8_gemm_wgmma_ws into [gate | up] followed by the
// gated activation bit for bit. Applies where the product would (on the [n, 2 inter] shape) and
// inter % 128 == 0 (a gate box must not reach the up rows); 128 x 256 tiles, accum as the product's.
bool fp8_gemm_wgmma_ws_glu_applies(const Tensor& act, const Tensor& codes, const Fp8Weight& w);
void launch_fp8_gemm_wgmma_ws_glu(const Tensor& act, const Tensor& codes, const Tensor& act_scales, const Fp8Weight& w,
                                  Activation f, cudaStream_t stream, Fp8WsAccum accum = Fp8WsAccum::by_switch,
                                  int cluster = 0);

// cluster (both launches above): 128 x 256 tiles in clusters of 2 CTAs along the rows, each CTA
// loading half of a stage's weight box and multicasting it into both (TMA multicast): a weight
// tile is read from L2 once for two row tiles, 32 instead of 48 KB a CTA a K block (the GEMM ran at
// ~6.3-7.1 TB/s from L2 alone). 1: alone; 0 (callers): the SEAM_FP8_WS_CLUSTER switch (1 or 2,
// default 2: FP8 prefill +10 %, docs/performance.md, twenty-first pass). 128-wide tiles always run alone.

// The tile width launch_fp8_gemm_wgmma_ws uses for tile_cols (0: the switch's).
int fp8_gemm_wgmma_ws_tile_cols(int tile_cols);

// The block tile's rows: two consumer warpgroups of m64; its outputs are 128 or 256 (above).
constexpr int kFp8WsTileRows = 128;

// SEAM_FP8_GEMM=ws / ws-lt route products of more rows than this here (fewer: a decode batch, which a
// 128-row tile would mostly waste; the tests launch the kernel at any row count).
constexpr int64_t kFp8WsMinRows = 64;

}  // namespace seam::cuda
