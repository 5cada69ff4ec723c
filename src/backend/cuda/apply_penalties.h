// Frequency / presence / repetition penalties on f32 logits, in place.
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"

namespace seam::cuda {
// logits [rows >= p.n, vocab] f32 (rows may be strided). A row's CSR entries name distinct tokens
// (a row lists each token it has seen once), so the entries of one row are applied in parallel.
void launch_apply_penalties(const Tensor& logits, const PenaltyBatch& p, cudaStream_t stream);
}
