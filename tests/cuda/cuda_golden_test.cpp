// stories260K in float32 on the GPU: every golden id, graphs on, mixed chunks.
#include <gtest/gtest.h>

#include "backend/backend_factory.h"
#include "golden.h"

namespace seam::test {
namespace {

TEST(CudaGolden, Float32EveryIdWithGraphsAndMixedChunks) {
  std::string why;
  if (!cuda_device_available(&why)) GTEST_SKIP() << "no GPU: " << why;
  for (bool mixed : {false, true}) {
    auto cfg = cuda_engine_config();
    cfg.enable_mixed_chunk = mixed;
    Engine engine(cfg);
    auto cases = golden_cases();
    std::vector<std::vector<int32_t>> prompts;
    std::vector<SamplingParams> params;
    for (auto& c : cases) prompts.push_back(c.prompt_ids), params.push_back(golden_params(c));
    auto results = engine.generate(prompts, params);
    for (size_t i = 0; i < cases.size(); ++i) {
      EXPECT_EQ(results[i].output_ids, cases[i].generated_ids) << cases[i].id << (mixed ? " mixed" : "");
      EXPECT_EQ(results[i].text, cases[i].generated_text) << cases[i].id;
    }
    engine.wait_idle();
    auto stats = engine.stats().to_json();
    EXPECT_EQ(stats["captures_after_seal"], 0);
    EXPECT_GT(stats["decode_graph_replays"], 0);
    EXPECT_GT(stats["piecewise_replays"], 0);
    if (mixed) EXPECT_GT(stats["piecewise_replays_mixed"], 0);
  }
}

}  // namespace
}  // namespace seam::test
