// The reference sampler of one row; the CUDA sampler implements the same rule.
#pragma once
#include <cstdint>

namespace seam {

// Picks a token from logits[0..vocab) (float32, may be modified):
//  1. temperature <= 0: argmax, ties to the lowest id.
//  2. p = softmax(logits / temperature); order tokens by p descending (ties: lower id first).
//  3. top_k > 0 keeps the first k; renormalise.
//  4. top_p < 1 keeps the shortest prefix whose cumulative p reaches top_p (at least one).
//  5. min_p > 0 keeps tokens with p >= min_p * p_max.
//  6. u = sampling_uniform(seed, step) * sum(kept); the first kept token whose cumulative
//     p exceeds u is drawn.
int32_t sample_row(float* logits, int vocab, float temperature, int top_k, float top_p, float min_p,
                   uint64_t seed, uint32_t step);

}  // namespace seam
