// Whether a linear of a few rows runs on the skinny GEMM (skinny_gemm.h) or on cuBLASLt: a
// pure host-side rule, kept apart so that it is tested without a GPU
// (tests/cuda/skinny_gemm_choice_test.cpp).
#pragma once
#include <cstdint>

namespace seam::cuda {

// The rule, fitted to `seam_kernel_bench --small-m` on the H200 (docs/performance.md, eighth
// pass; skinny / cuBLASLt us at 2-8 rows): it is faster on the projections of at most 4096
// outputs and 2^24 weights -- 0.5B qkv 2.6-2.8 / 3.7-3.9, o 2.5-2.6 / 3.6-4.5, down 6.8 / 7.4-7.5;
// 1B qkv 5.7-6.3 / 6.4-6.6, o 4.8-5.2 / 6.0, down 11.8-12.2 / 13.0-13.4; 8B o 10.5-10.7 /
// 12.5-12.8 -- and slower on wider or larger ones (gate_up of every shape by 9-13 %, 8B qkv and
// down by 1-4 %, lm_head). From 9 rows its lead shrinks and turns (1B qkv 6.9 / 6.4 at 16).
constexpr int64_t kSkinnyRuleMaxRows = 8;
constexpr int64_t kSkinnyRuleMaxOut = 4096;
constexpr int64_t kSkinnyRuleMaxWeights = int64_t(1) << 24;

// mode: SEAM_SKINNY_GEMM (0 never, 1 by the rule (the default), 2 always where it applies);
// rows: rows of x (the caller has checked skinny_gemm_applies); n_out x n_in: the weight.
bool choose_skinny_gemm(int mode, int64_t rows, int64_t n_out, int64_t n_in);

}  // namespace seam::cuda
