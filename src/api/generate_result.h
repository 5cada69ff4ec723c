// GenerateResult: one request's whole answer from the blocking Engine::generate.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "api/finish_reason.h"
#include "api/token_logprob.h"

namespace seam {

struct GenerateResult {
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> output_ids;
  std::string text;
  FinishReason finish_reason = FinishReason::none;
  double queue_time_s = 0, ttft_s = 0, e2e_s = 0;
  std::vector<double> token_times_s;
  std::vector<TokenLogprob> logprobs;         // per output token, with SamplingParams::logprobs >= 0
  std::vector<TokenLogprob> prompt_logprobs;  // per prompt token, with SamplingParams::prompt_logprobs
};

}  // namespace seam
