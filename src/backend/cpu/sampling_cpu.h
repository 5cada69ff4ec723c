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

// The logprobs of one row of raw logits (backend.h LogprobBatch), in float32:
// logprob[i] = (logits[i] - max) - log(sum_j exp(logits[j] - max)). k < 0: nothing is written.
// top_ids/top_lp receive the first k tokens by (logprob descending, id ascending).
void logprobs_row(const float* logits, int vocab, int k, int32_t sampled, float* out_sampled, int32_t* top_ids,
                  float* top_lp);

}  // namespace seam
