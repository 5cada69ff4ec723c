// The CPU reference of the FP8 linear (backend.h "FP8 linear"), as free functions so tests
// and the CUDA op test can call the pieces: the activation quantization alone, and the
// whole product.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/backend.h"

namespace seam::fp8_cpu {

// The quantized activations of one float32 row x[0..n_in): codes[k] = e4m3(x[k] / xs(g)) and
// scales[g] = xs(g), one group (n_groups == 1) or 128-wide groups (dynamic_group128).
void quantize_row(const float* x, int64_t n_in, const Fp8Weight& w, uint8_t* codes, float* scales);

// out[i][o] (=|+=) the FP8 product of float32 x [n, in] and w, plus bias; host memory.
// round_act_bits in 1..22: x is rounded to that many mantissa bits (to nearest, ties to even;
// 7 = bfloat16) before it is quantized: one legitimate rounding change of the activations, the
// yardstick of tests/cuda/cuda_fp8_model_parity_test.cpp; 0: as it is. Output features are
// spread over the host's threads; the result does not depend on how.
void linear_rows(const Tensor& out, const Tensor& x, const Fp8Weight& w, const Tensor& bias, bool accumulate,
                 int round_act_bits = 0);

// v rounded to `bits` (1..22) mantissa bits, to nearest with ties to even; inf / NaN kept.
float round_mantissa(float v, int bits);

}  // namespace seam::fp8_cpu
