#include "golden.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace seam::test {

std::vector<GoldenCase> golden_cases() {
  auto j = nlohmann::json::parse(read_file(shared_dir() + "/golden/stories260K_greedy.json"));
  std::vector<GoldenCase> out;
  for (auto& c : j["cases"]) {
    GoldenCase g;
    g.id = c.value("id", c["prompt"].get<std::string>());
    g.prompt = c["prompt"];
    g.generated_text = c["generated_text"];
    g.prompt_ids = c["prompt_ids"].get<std::vector<int32_t>>();
    g.generated_ids = c["generated_ids"].get<std::vector<int32_t>>();
    out.push_back(g);
  }
  return out;
}

EngineConfig cpu_engine_config() {
  EngineConfig c;
  c.model_path = stories_dir();
  c.device = Device::cpu;
  return c;
}

EngineConfig cuda_engine_config() {
  EngineConfig c = cpu_engine_config();
  c.device = Device::cuda;
  c.dtype = "float32";
  c.chunked_prefill_size = 64;
  c.max_total_tokens = 20000;
  c.mem_fraction_static = 0.3;
  return c;
}

SamplingParams golden_params(const GoldenCase& c) {
  SamplingParams p;
  p.temperature = 0.f;
  p.max_new_tokens = int32_t(c.generated_ids.size());
  return p;
}

void expect_golden_outputs(Engine& engine, const std::vector<GoldenCase>& cases) {
  std::vector<std::vector<int32_t>> prompts;
  std::vector<SamplingParams> params;
  for (const auto& c : cases) {
    prompts.push_back(c.prompt_ids);
    params.push_back(golden_params(c));
  }
  auto results = engine.generate(prompts, params);
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(results[i].output_ids, cases[i].generated_ids) << "case " << cases[i].id;
    EXPECT_EQ(results[i].text, cases[i].generated_text) << "case " << cases[i].id;
  }
}

}  // namespace seam::test
