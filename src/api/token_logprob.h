// TokenLogprob: the log probability of one generated (or prompt) token under the
// model's own distribution -- log_softmax of the float32 logits, before logit_bias,
// penalties and temperature (vLLM's default "raw" logprobs) -- and the request's
// top alternatives, most likely first (ties: lower id first).
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

namespace seam {

// The most alternatives a request may ask for (OpenAI's bound on top_logprobs / logprobs).
inline constexpr int kMaxTopLogprobs = 20;

struct TokenLogprob {
  int32_t id = -1;
  float logprob = 0.f;
  std::vector<std::pair<int32_t, float>> top;  // (id, logprob), at most the request's k
};

}  // namespace seam
