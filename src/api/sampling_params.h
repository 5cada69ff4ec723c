// SamplingParams: how one request samples and when it stops (OpenAI / sglang names).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace seam {

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

  // Throws RequestError(invalid_request) whose param names the bad field.
  void validate(int vocab_size) const;
};

}  // namespace seam
