// apply_logit_bias: logits[r][tokens[e]] += values[e] over each row's CSR entries
// (backend.h LogitBiasBatch), as CpuBackend::apply_logit_bias.
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"

namespace seam::cuda {
void launch_apply_logit_bias(const Tensor& logits, const LogitBiasBatch& b, cudaStream_t stream);
}
