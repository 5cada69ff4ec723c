// RequestOutput: the per-token output event of one request, handed to its
// StreamCallback on the engine thread once per step that produced something,
// and once more (finished) at the end.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "api/error_kind.h"
#include "api/finish_reason.h"
#include "api/token_logprob.h"

namespace seam {

struct RequestOutput {
  uint64_t id = 0;
  std::vector<int32_t> new_ids;  // tokens generated since the last callback
  std::string new_text;          // text since the last callback (never half a UTF-8 char)
  // With SamplingParams::logprobs >= 0: one entry per new_ids entry, in the same order.
  std::vector<TokenLogprob> new_logprobs;
  // With SamplingParams::prompt_logprobs: on the first output, one entry per prompt token
  // (the first has no logprob: id set, logprob NaN, no top).
  std::vector<TokenLogprob> prompt_logprobs;
  bool finished = false;
  FinishReason finish_reason = FinishReason::none;
  int n_prompt_tokens = 0;
  int n_output_tokens = 0;
  int n_cached_tokens = 0;
  std::string error;             // set when the engine failed the request
  ErrorKind error_kind = ErrorKind::none;  // internal or engine_dead when `error` is set
  // Timing (seconds since arrival), filled on the final callback.
  double queue_time_s = 0;       // arrival -> first scheduled
  double ttft_s = 0;             // arrival -> first token
  double e2e_s = 0;              // arrival -> finish
  std::vector<double> token_times_s;  // arrival -> each output token
};

using StreamCallback = std::function<void(const RequestOutput&)>;

}  // namespace seam
