// The golden greedy outputs of stories260K (../shared/golden), and a helper
// that runs them through an engine configuration.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "test_util.h"

namespace seam::test {

struct GoldenCase {
  std::string id, prompt, generated_text;
  std::vector<int32_t> prompt_ids, generated_ids;
};

std::vector<GoldenCase> golden_cases();
EngineConfig cpu_engine_config();  // stories260K on the cpu backend, defaults otherwise
// stories260K on the cuda backend in float32 with graphs: prefill chunks of 64 (a golden prompt
// spans several piecewise graphs), a 20,000-token pool in 30% of the GPU's memory.
EngineConfig cuda_engine_config();
// Greedy sampling params that reproduce a case (max_new_tokens = its length).
SamplingParams golden_params(const GoldenCase& c);
// Submits every case at once to `engine` (each with golden_params) and expects each output's
// ids and text to equal the case's; failures name the case.
void expect_golden_outputs(Engine& engine, const std::vector<GoldenCase>& cases);

}  // namespace seam::test
