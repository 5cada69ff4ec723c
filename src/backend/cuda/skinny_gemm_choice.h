// Whether a linear of a few rows runs on the skinny GEMM (skinny_gemm.h) or on cuBLASLt: a
// pure host-side rule, kept apart so that it is tested without a GPU
// (tests/cuda/skinny_gemm_choice_test.cpp).
#pragma once
#include <cstdint>

namespace seam::cuda {

// The rule, fitted to `seam_kernel_bench --small-m` on the H200 (docs/performance.md, eighth
// pass, call 4; skinny / cuBLASLt us at 2 and 8 rows): the skinny GEMM is faster on the
// projections of at most 4096 outputs and 2^24 weights -- 0.5B qkv 2.6-2.8 / 3.7-3.8, o 2.5-2.7 /
// 3.7-4.4, down 6.7-6.9 / 7.4-7.5; 1B qkv 5.7-6.3 / 6.3-6.4, o 4.8-5.3 / 5.9-6.1, down 11.7-12.4 /
// 12.7-13.1; 8B o 10.5-10.9 / 12.6-12.9 -- and slower on the wide ones: gate_up (0.5B 7.8-8.4 /
// 6.8-6.9, 1B 19.4-20.4 / 18.6-19.0, 8B 59.3-61.3 / 59.0-59.4), 8B qkv (16.5-17.4 / 15.1-15.6) and
// the lm_head; 8B down is a tie (32.2-32.6 / 32.4-33.1) and stays on cuBLASLt. From 9 rows its
// lead shrinks or turns (16 rows: 1B qkv 7.0 / 6.5, 1B down 13.3 / 13.0).
constexpr int64_t kSkinnyRuleMaxRows = 8;
constexpr int64_t kSkinnyRuleMaxOut = 4096;
constexpr int64_t kSkinnyRuleMaxWeights = int64_t(1) << 24;

// mode: SEAM_SKINNY_GEMM (0 never, 1 by the rule (the default), 2 always where it applies);
// rows: rows of x (the caller has checked skinny_gemm_applies); n_out x n_in: the weight.
bool choose_skinny_gemm(int mode, int64_t rows, int64_t n_out, int64_t n_in);

}  // namespace seam::cuda
