// The measured request of the FP8 KV cache tests (fp8_kv_cache_test on the CPU,
// cuda/cuda_fp8_kv_engine_test on the GPU): golden case 0's first 24 prompt tokens, greedy,
// 10 new tokens with their top-2 logprobs and the prompt's logprobs; what a run gives back;
// and the comparison of two runs' greedy ids where the reference run is confident.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "golden.h"

namespace seam::test {

struct KvRun {
  std::vector<int32_t> ids;
  std::vector<float> prompt_logprobs;  // of prompt token t given tokens < t, t >= 1
  std::vector<float> margins;          // top-1 minus top-2 logprob of each generated token
};

inline std::vector<int32_t> kv_run_prompt() {
  std::vector<int32_t> prompt = golden_cases()[0].prompt_ids;
  prompt.resize(std::min<size_t>(prompt.size(), 24));
  return prompt;
}

inline SamplingParams kv_run_params() {
  SamplingParams p;
  p.temperature = 0.f;
  p.max_new_tokens = 10;
  p.logprobs = 2;
  p.prompt_logprobs = true;
  return p;
}

inline KvRun kv_run_of(const GenerateResult& r) {
  KvRun out;
  out.ids = r.output_ids;
  for (size_t t = 1; t < r.prompt_logprobs.size(); ++t) out.prompt_logprobs.push_back(r.prompt_logprobs[t].logprob);
  for (const auto& lp : r.logprobs) out.margins.push_back(lp.top.size() == 2 ? lp.top[0].second - lp.top[1].second : 0.f);
  return out;
}

// Expects got's greedy ids to equal ref's while ref's top-1 margin stays above `margin` (past
// it, a small change of the logprobs may rightly swap the top two); stops at the first
// difference. Returns how many ids were compared.
inline int expect_confident_ids_equal(const KvRun& ref, const KvRun& got, float margin) {
  int compared = 0;
  for (size_t i = 0; i < ref.ids.size() && ref.margins[i] > margin; ++i, ++compared) {
    if (i < got.ids.size() && got.ids[i] == ref.ids[i]) continue;
    ADD_FAILURE() << "greedy id " << i << ": " << (i < got.ids.size() ? got.ids[i] : -1) << ", the reference run's "
                  << ref.ids[i];
    break;
  }
  return compared;
}

}  // namespace seam::test
