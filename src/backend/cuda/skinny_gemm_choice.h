// Whether a linear of a few rows runs on the skinny GEMM (skinny_gemm.h) or on cuBLASLt: a
// pure host-side rule, kept apart so that it is tested without a GPU
// (tests/cuda/skinny_gemm_choice_test.cpp).
#pragma once
#include <cstdint>

namespace seam::cuda {

// mode: SEAM_SKINNY_GEMM (0 never, 1 by the rule (the default), 2 always where it applies);
// rows: rows of x (the caller has checked skinny_gemm_applies, so 2 <= rows <= 64 here: one
// row takes the GEMV); n_out x n_in: the weight.
bool choose_skinny_gemm(int mode, int64_t rows, int64_t n_out, int64_t n_in);

}  // namespace seam::cuda
