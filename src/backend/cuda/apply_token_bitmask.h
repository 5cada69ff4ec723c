// apply_token_bitmask: logits[rows[i]][t] = -inf where bit t of bitmask[i] is clear, for the
// structured-output rows of a step (backend.h Backend::apply_token_bitmask), as
// CpuBackend::apply_token_bitmask.
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"

namespace seam::cuda {
void launch_apply_token_bitmask(const Tensor& logits, const Tensor& bitmask, const Tensor& rows,
                                cudaStream_t stream);
}
