// logprobs: log_softmax of raw float32 logits per row, the sampled token's logprob and
// the top-k (backend.h LogprobBatch), by the rule of backend/cpu/sampling_cpu.h
// logprobs_row. Rows with k < 0 return at once.
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"

namespace seam::cuda {
void launch_logprobs(const Tensor& logits, const LogprobBatch& b, cudaStream_t stream);
}
