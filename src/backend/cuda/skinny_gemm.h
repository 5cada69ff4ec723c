// Weight-streaming tensor-core GEMM for a few rows of x (decode batches of 2-16 and short
// extends): out [m, n_out] = x [m, n_in] @ w [n_out, n_in]^T, each weight byte read once.
//
// At these row counts a linear is a pass over the weights, and on the small models' 1-17 MB
// matrices cuBLASLt pays 4-9 us of fixed cost where the bytes need 0.5-4 us (seam_gemm_sweep
// --space: no configuration of its algorithm space does much better). Each block owns 16 output
// features; its 8 warps split K, and each streams its slice of the 16 weight rows with 16-byte
// loads into mma.sync m16n8k16 (the weights are the A operand, 8 rows of x an n-tile of B);
// the slices' partial sums meet in shared memory. It wins where cuBLASLt's fixed cost is a
// large part of the time (n_out <= 4096, <= 16 M weights: skinny_gemm_choice.h), and loses
// to it on wide projections (gate_up, lm_head), where the 16-feature blocks are many and short.
// No operand is re-laid-out: a lane's 16-byte load of a weight row is 8 consecutive k, and the
// same lane loads the same 8 k of each x row, so one fixed permutation of k inside a 32-k chunk
// serves both operands.
#pragma once
#include <cuda_runtime.h>

#include "core/tensor.h"

namespace seam::cuda {

// The most rows of x the kernel takes (2 n-tiles of 8). Every block re-reads x, so its traffic
// grows with rows x n_out / 16: at 32-64 rows it exceeded the weights' and the kernel was 1.3-5x
// slower than cuBLASLt (docs/performance.md, eighth pass).
constexpr int64_t kSkinnyMaxRows = 16;

// True when launch_skinny_gemm can compute this linear: x and w bf16 or f16 (one dtype), out
// that dtype or f32, bias undefined or w's dtype, 1 <= rows <= kSkinnyMaxRows, n_in % 32 == 0,
// x's and w's rows 16-byte aligned.
bool skinny_gemm_applies(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias);

// out [m, n_out] (+)= x [m, n_in] @ w [n_out, n_in]^T (+ bias [n_out]), fp32 accumulation.
// accumulate: out += result (out has x's dtype). Requires skinny_gemm_applies.
void launch_skinny_gemm(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias, bool accumulate,
                        cudaStream_t stream);

}  // namespace seam::cuda
