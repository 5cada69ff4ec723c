#include "scheduler/sampling_params.h"

#include <cmath>

#include "core/error.h"

namespace seam {

void SamplingParams::validate(int vocab_size) const {
  SEAM_CHECK(std::isfinite(temperature) && temperature >= 0.f, "temperature must be >= 0, got ", temperature);
  SEAM_CHECK(top_p > 0.f && top_p <= 1.f, "top_p must be in (0, 1], got ", top_p);
  SEAM_CHECK(top_k == -1 || top_k >= 1, "top_k must be -1 (off) or >= 1, got ", top_k);
  SEAM_CHECK(min_p >= 0.f && min_p <= 1.f, "min_p must be in [0, 1], got ", min_p);
  SEAM_CHECK(frequency_penalty >= -2.f && frequency_penalty <= 2.f, "frequency_penalty must be in [-2, 2], got ",
             frequency_penalty);
  SEAM_CHECK(presence_penalty >= -2.f && presence_penalty <= 2.f, "presence_penalty must be in [-2, 2], got ",
             presence_penalty);
  SEAM_CHECK(repetition_penalty > 0.f && repetition_penalty <= 2.f, "repetition_penalty must be in (0, 2], got ",
             repetition_penalty);
  SEAM_CHECK(max_new_tokens >= 0, "max_new_tokens must be >= 0, got ", max_new_tokens);
  for (int32_t id : stop_token_ids)
    SEAM_CHECK(id >= 0 && id < vocab_size, "stop_token_ids: ", id, " is outside the vocabulary");
  for (const auto& s : stop) SEAM_CHECK(!s.empty(), "stop: empty stop string");
}

}  // namespace seam
