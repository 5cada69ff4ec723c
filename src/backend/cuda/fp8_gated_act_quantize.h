// The gated activation that also produces the FP8 activations of the next linear (backend.h
// "FP8 linear", the activation half, fused with its producer): act [n, inter] = f(gate) * up as
// gated_act.cu computes it (rounded to act's dtype), and codes [n, inter] E4M3 / scales
// [n_groups, n] (fp8_quantize.h's layout) of those rounded values under a dynamic scheme
// (per token or 1x128 groups): the codes launch_fp8_quantize_act would make from act. The
// down projection past the GEMV's batch sizes then runs no quantize kernel of its own
// (CudaBackend::rms_norm_gate_up_act_fp8 hands them to the next linear_fp8 of act).
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"

namespace seam::cuda {
// gate_up [n, 2 * inter] (rows may be strided), act [n, inter] (packed rows), one float dtype;
// act_scheme dynamic_per_token or dynamic_group128, ub > 0 clamps the amax (Fp8Weight::act_amax_ub).
void launch_fp8_gated_act_quantize(const Tensor& act, const Tensor& codes, const Tensor& scales, const Tensor& gate_up,
                                   Activation f, Fp8ActScheme act_scheme, float ub, cudaStream_t stream);
}  // namespace seam::cuda
