#include "api/sampling_params.h"

#include <cmath>

#include "api/error_kind.h"

namespace seam {

namespace {
// Throws invalid_request naming `param` unless `ok`.
template <typename... Args>
void require(bool ok, const char* param, Args&&... parts) {
  if (!ok) throw invalid_request(detail::concat(std::forward<Args>(parts)...), param);
}
}  // namespace

void SamplingParams::validate(int vocab_size) const {
  require(std::isfinite(temperature) && temperature >= 0.f, "temperature", "temperature must be >= 0, got ",
          temperature);
  require(top_p > 0.f && top_p <= 1.f, "top_p", "top_p must be in (0, 1], got ", top_p);
  require(top_k == -1 || top_k >= 1, "top_k", "top_k must be -1 (off) or >= 1, got ", top_k);
  require(min_p >= 0.f && min_p <= 1.f, "min_p", "min_p must be in [0, 1], got ", min_p);
  require(frequency_penalty >= -2.f && frequency_penalty <= 2.f, "frequency_penalty",
          "frequency_penalty must be in [-2, 2], got ", frequency_penalty);
  require(presence_penalty >= -2.f && presence_penalty <= 2.f, "presence_penalty",
          "presence_penalty must be in [-2, 2], got ", presence_penalty);
  require(repetition_penalty > 0.f && repetition_penalty <= 2.f, "repetition_penalty",
          "repetition_penalty must be in (0, 2], got ", repetition_penalty);
  require(max_new_tokens >= 0, "max_new_tokens", "max_new_tokens must be >= 0, got ", max_new_tokens);
  for (int32_t id : stop_token_ids)
    require(id >= 0 && id < vocab_size, "stop_token_ids", "stop_token_ids: ", id, " is outside the vocabulary");
  for (const auto& s : stop) require(!s.empty(), "stop", "stop: empty stop string");
  require(logprobs >= -1 && logprobs <= kMaxTopLogprobs, "logprobs", "logprobs must be in [0, ",
          kMaxTopLogprobs, "], got ", logprobs);
  require(!prompt_logprobs || logprobs >= 0, "prompt_logprobs", "prompt_logprobs needs logprobs");
  require(logit_bias.size() <= size_t(kMaxLogitBias), "logit_bias", "logit_bias has ", logit_bias.size(),
          " entries, at most ", kMaxLogitBias, " are allowed");
  for (const auto& [id, bias] : logit_bias) {
    require(id >= 0 && id < vocab_size, "logit_bias", "logit_bias: token id ", id, " is outside the vocabulary");
    require(std::isfinite(bias) && bias >= -100.f && bias <= 100.f, "logit_bias", "logit_bias: the bias of token ",
            id, " must be in [-100, 100], got ", bias);
  }
}

}  // namespace seam
