// The FP8 product (backend.h "FP8 linear", the product half) for decode batches of a few rows
// (5..64: past the GEMV, kFp8GemvMaxRows) on Hopper's FP8 tensor cores, weight-streaming and
// swap-AB: the weight W [N, K] (K-major, as FP8 wgmma requires) is wgmma's A operand (m64: 64
// output features a consumer warpgroup's wgmma, 128 or 256 a tile), the activation codes [rows, K]
// its B (n = the
// rows padded to 8, 16, 32 or 64), so no tensor-core lane is spent on padding rows past 64; each
// tile's K may be split over several blocks (split K) so that the few tiles of a narrow product
// still fill the GPU. The scales are fused as in fp8_gemm_wgmma.h: every 128-wide K block's
// fresh wgmma partial is promoted into float32 sums (block128: times xs(i, kb) ws(o, kb));
// per-tensor / per-channel weights are scaled once in the epilogue, which adds the bias and the
// accumulate and rounds once to out's dtype (fp8_gemm.cu's arithmetic after S).
// Tests: tests/cuda/cuda_fp8_skinny_wgmma_test.cpp; bench: seam_kernel_bench --fp8.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backend/backend.h"

namespace seam::cuda {

// Products of at most this many rows (one wgmma N of 64 tokens).
constexpr int64_t kFp8SkinnyMaxRows = 64;
// Split-K tickets the workspace holds (one a tile of a split product): its first
// kFp8SkinnyTickets * 4 bytes, zero when allocated and left zero by every launch.
constexpr int kFp8SkinnyTickets = 4096;

// How a product runs: n the wgmma N (rows padded), tiles of `features` (128: two consumer
// warpgroups of one m64 each; 256: of two), each tile's K blocks (of 128) split over `splits` blocks
// (split i takes K blocks [i n_kb / splits, (i + 1) n_kb / splits)); blocks = tiles * splits;
// blocks_per_sm the ring (1: ~200 KB of stages; 2: two blocks an SM of ~100 KB each, 128-feature
// tiles only).
struct Fp8SkinnyPlan {
  int n = 0, features = 128, tiles = 0, splits = 1, blocks_per_sm = 1;
  int64_t blocks() const { return int64_t(tiles) * splits; }
};

// The plan for rows x n_out x n_in on n_sms multiprocessors (host-side rule, exposed for the tests
// and the bench). blocks_per_sm: 1 or 2, 0 the SEAM_FP8_SKINNY_BLOCKS_PER_SM switch (default 1);
// tile_features: 128 or 256, 0 the SEAM_FP8_SKINNY_TILE switch (default: 256 on the one-block ring
// for n >= 32 where the 256-feature tiles are at least half the SMs, else 128); splits: 0 picks
// (the fewest K blocks a multiprocessor streams, counting the float32 partials' writes and the
// last block's reduction as about one K block of weight each per 64 rows), else that many
// (clamped to [1, n_kb] and to the ticket count).
Fp8SkinnyPlan fp8_gemm_skinny_wgmma_plan(int64_t rows, int64_t n_out, int64_t n_in, int n_sms, int blocks_per_sm = 0,
                                         int splits = 0, int tile_features = 0);

// Device memory a plan needs: 0 without split K, else the tickets (kFp8SkinnyTickets * 4 bytes)
// and one float32 partial [features x n] per block.
size_t fp8_gemm_skinny_wgmma_workspace_bytes(const Fp8SkinnyPlan& plan);

// Whether launch_fp8_gemm_skinny_wgmma takes this product: fp8_gemm_wgmma_applies (an sm_90a build
// on a CC 9.0 GPU, K % 128 == 0, N % 8 == 0, contiguous 16-byte-aligned codes, f32/f16/bf16 out),
// 1 <= rows <= kFp8SkinnyMaxRows, and the driver's TMA encoder was found.
bool fp8_gemm_skinny_wgmma_applies(const Tensor& out, const Tensor& codes, const Fp8Weight& w);

// As launch_fp8_gemm_wgmma (same operands: codes [n, K] E4M3 contiguous, act_scales [n_groups, n]
// f32, bias [N] in out's dtype or undefined; same results up to the order of the float32 sums,
// bit-equal on exactly representable values). workspace: device memory of at least
// fp8_gemm_skinny_wgmma_workspace_bytes(plan) bytes whose first kFp8SkinnyTickets * 4 bytes are
// the tickets (zero when allocated; every launch leaves them zero); may be null when the plan has
// no split. Graph-capturable (the tensor maps are encoded on the host at every launch and travel
// as kernel parameters; nothing allocated). Deterministic: a split tile's last-arriving block adds
// the float32 partials in split order. blocks_per_sm / splits / tile_features: as
// fp8_gemm_skinny_wgmma_plan. Launches on one workspace must be stream-ordered (every seam kernel
// waits for its predecessor).
void launch_fp8_gemm_skinny_wgmma(const Tensor& out, const Tensor& codes, const Tensor& act_scales, const Fp8Weight& w,
                                  const Tensor& bias, bool accumulate, cudaStream_t stream, void* workspace,
                                  size_t workspace_bytes, int blocks_per_sm = 0, int splits = 0, int tile_features = 0);

// The plan launch_fp8_gemm_skinny_wgmma runs for this product on the current device.
Fp8SkinnyPlan fp8_gemm_skinny_wgmma_plan_for(const Tensor& codes, const Fp8Weight& w, int blocks_per_sm = 0,
                                             int splits = 0, int tile_features = 0);

}  // namespace seam::cuda
