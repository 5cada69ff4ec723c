#include "golden.h"

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

SamplingParams golden_params(const GoldenCase& c) {
  SamplingParams p;
  p.temperature = 0.f;
  p.max_new_tokens = int32_t(c.generated_ids.size());
  return p;
}

}  // namespace seam::test
