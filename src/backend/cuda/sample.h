// sample: one token id per row of f32 logits, by exactly the rule of
// backend/cpu/sampling_cpu.h (greedy; temperature, top-k, top-p, min-p; the
// draw u = sampling_uniform(seed, step)).
#pragma once
#include <cuda_runtime.h>

#include "backend/backend.h"

namespace seam::cuda {
// logits [rows >= s.n, vocab] f32 (rows may be strided; a sampled row is overwritten with its
// probabilities), out_ids [>= s.n] i32. One block per row; a row's result depends only on its
// logits, seed and step (never on the batch), and is deterministic.
void launch_sample(const Tensor& out_ids, const Tensor& logits, const SamplingBatch& s, cudaStream_t stream);
}
