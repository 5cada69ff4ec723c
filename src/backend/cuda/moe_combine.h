// The last pass of the grouped mixture-of-experts paths: each row's k expert outputs, weighted and
// added to the residual.
#pragma once
#include <cuda_runtime.h>

#include "core/tensor.h"

namespace seam::cuda {

// out[i][h] += sum_j w[i * k + j] * expert_out[i * k + j][h]: j in order, float32, rounded once.
// expert_out [>= n * k, hidden] contiguous, 16-byte aligned, hidden % 8 == 0 (each thread reads 8
// columns of every expert row), in out's 16-bit dtype or float32 (unrounded expert outputs: the
// sum then rounds once, as the cpu definition); out any row stride.
//
// Two forms, the same bits: scalar (each 16-bit row vector read as eight 2-byte loads, out's
// columns one by one: the form as first built) and vector (one 16-byte load a row vector, out's 8
// columns read and written as one vector; where out's rows are not 16-byte aligned, or the
// expert rows are float32, the scalar form runs), the default; SEAM_MOE_COMBINE_VECTOR=0 (read
// once) makes scalar the default.
enum class MoeCombineForm { scalar, vector };
MoeCombineForm moe_combine_form_default();
// Whether launch_moe_combine(out, expert_out, ..., form) runs the vector kernel (tests hold the
// launcher to it: a condition that never held would run the scalar form under both names).
bool moe_combine_takes_vector(const Tensor& out, const Tensor& expert_out, MoeCombineForm form);
void launch_moe_combine(const Tensor& out, const Tensor& expert_out, const Tensor& topk_weights, cudaStream_t stream,
                        MoeCombineForm form = moe_combine_form_default());

}  // namespace seam::cuda
