// Weight folds: load-time rewrites of a checkpoint tensor that let the forward skip an op.
// Each returns a float32 HostTensor viewing `storage` (which must outlive its upload); the
// fold is done in float32, before the conversion to the activation dtype, so it rounds once.
#pragma once
#include <cstdint>
#include <vector>

#include "model/checkpoint.h"

namespace seam {

// Gemma's RMSNorm weight (1 + w): the norm then multiplies by the stored weight as Llama's does.
HostTensor fold_plus_one(const HostTensor& w, std::vector<float>& storage);

// A q or k projection [n_heads * head_dim, in] with the first `rotary_dim` rows of every head
// multiplied by `factor` (LongRoPE's attention factor under partial rotary; decoder_recipe.h).
HostTensor fold_rotary_rows(const HostTensor& w, int head_dim, int rotary_dim, float factor,
                            std::vector<float>& storage);

// The fold itself, in place on float32 rows [n_rows, cols] (row-major): row r with
// r % period < count multiplied by `factor` (one float32 rounding). fold_rotary_rows runs it with
// period head_dim, count rotary_dim; a weight-only FP8 layer on its dequantized values
// (fp8_linear.cpp, Linear::RowFold).
void scale_periodic_rows(float* rows, int64_t n_rows, int64_t cols, int64_t period, int64_t count, float factor);

}  // namespace seam
