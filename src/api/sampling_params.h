// SamplingParams: how one request samples and when it stops (OpenAI / sglang names).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/output_constraint.h"
#include "api/token_logprob.h"

namespace seam {

inline constexpr int kMaxLogitBias = 300;

struct SamplingParams {
  float temperature = 1.f;  // 0: greedy
  float top_p = 1.f;
  int32_t top_k = -1;       // -1: off
  float min_p = 0.f;
  std::optional<uint64_t> seed;  // none: the engine draws one
  float frequency_penalty = 0.f;
  float presence_penalty = 0.f;
  float repetition_penalty = 1.f;
  int32_t max_new_tokens = 128;
  std::vector<std::string> stop;         // stop strings (excluded from the output text)
  std::vector<int32_t> stop_token_ids;   // extra stop ids (the id itself is kept in output_ids)
  bool ignore_eos = false;
  bool skip_special_tokens = true;
  // -1: no logprobs. 0..kMaxTopLogprobs: each output token's logprob and this many top
  // alternatives (api/token_logprob.h), in RequestOutput::new_logprobs.
  int32_t logprobs = -1;
  // With logprobs >= 0: also the prompt tokens' logprobs (the first token has none), in
  // RequestOutput::prompt_logprobs of the first output.
  bool prompt_logprobs = false;
  // Added to the logits of these token ids before penalties and sampling (OpenAI logit_bias,
  // each in [-100, 100], at most kMaxLogitBias entries).
  std::vector<std::pair<int32_t, float>> logit_bias;
  // Structured output (api/output_constraint.h): only tokens the constraint allows are sampled;
  // EOS and stop ids only where it may end.
  std::optional<OutputConstraint> constraint;
  // Opts this request out of speculative decoding (the engine also leaves out requests with
  // penalties or a constraint). Greedy and seeded outputs are the same either way.
  bool disable_speculative = false;

  // Throws RequestError(invalid_request) whose param names the bad field.
  void validate(int vocab_size) const;
};

}  // namespace seam
