// The request fields of log probabilities and logit bias, as OpenAI defines them:
//   completions: logprobs (integer 0..20: the sampled token's logprob and that many top
//                alternatives), echo (the prompt text -- and with logprobs its tokens'
//                logprobs -- before the completion)
//   chat:        logprobs (boolean), top_logprobs (0..20, needs logprobs: true)
//   both:        logit_bias ({"token id": bias in [-100, 100]})
// Each bad value is a 400 naming its field.
#pragma once
#include <nlohmann/json.hpp>

#include "server/openai_request.h"

namespace seam {

// Reads the fields into r.params (logprobs, prompt_logprobs, logit_bias) and r.echo.
void read_logprob_fields(const nlohmann::json& body, ApiKind kind, ApiRequest& r);

}  // namespace seam
