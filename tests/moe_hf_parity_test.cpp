// The mixture-of-experts architectures on the cpu backend against Hugging Face
// transformers 5.17: tests/data/hf_tiny/tiny-{qwen3-moe,qwen2-moe,mixtral} are tiny
// random float32 checkpoints with transformers' float32 last-token logits and 32 greedy
// ids for prompts of 1, 17 and 40 tokens (reference.json, made by
// tools/make_random_models.py). Through the Engine with graphs on, graphs off, and
// mixed chunk on with 16-token chunks (MoE under mixed batches and piecewise graphs):
//  - last-token logits of each prompt, alone and batched, within 1e-4 relative error
//    (as tests/cuda/hf_parity_test.cpp measures it; graphs on and off);
//  - the 32 greedy ids of every prompt equal, all prompts submitted at once;
//  - no capture after the seal.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "engine/engine_bench_access.h"
#include "runtime/model_runner.h"
#include "hf_reference.h"
#include "test_util.h"

namespace seam::test {
namespace {

std::string model_dir(const std::string& name) { return std::string(SEAM_SOURCE_DIR) + "/tests/data/hf_tiny/" + name; }

enum class Mode { graphs, eager, mixed_chunk16 };
const char* mode_name(Mode m) {
  return m == Mode::graphs ? "graphs" : m == Mode::eager ? "eager" : "mixed_chunk16";
}

class MoeHfParity : public ::testing::TestWithParam<std::tuple<std::string, Mode>> {};

TEST_P(MoeHfParity, LogitsAndGreedyIds) {
  const std::string name = std::get<0>(GetParam());
  const Mode mode = std::get<1>(GetParam());
  const std::string dir = model_dir(name);
  const std::vector<RefPrompt> prompts = load_hf_reference(dir);
  ASSERT_EQ(prompts.size(), 3u);

  EngineConfig cfg = tiny_engine_config(dir);
  cfg.disable_cuda_graph = mode == Mode::eager;
  if (mode == Mode::mixed_chunk16) {
    cfg.chunked_prefill_size = 16;
    cfg.enable_mixed_chunk = true;
  }
  Engine engine(cfg);
  const int V = engine.model_info().vocab_size;

  // Steps driven directly must fit the step buffers, which a 16-token chunk sizes to 16 tokens:
  // with mixed chunk on, the prompts go through the scheduler only (the greedy ids below).
  std::vector<std::vector<float>> logits;
  if (mode != Mode::mixed_chunk16) logits = run_logits(EngineBenchAccess::runner(engine), prompts, V, 64);
  for (size_t i = 0; i < logits.size(); ++i) {
    const RefPrompt& p = prompts[i % prompts.size()];
    const double err = rel_err(logits[i], p.logits_fp32);
    EXPECT_LT(err, 1e-4) << name << " " << mode_name(mode) << (i < prompts.size() ? " alone" : " batched")
                         << " prompt of " << p.ids.size() << " tokens";
  }

  const GreedyRequests greedy = greedy_requests(prompts);
  auto results = engine.generate(greedy.prompts, greedy.params);
  for (size_t w = 0; w < prompts.size(); ++w)
    EXPECT_EQ(results[w].output_ids, prompts[w].greedy_fp32) << name << " " << mode_name(mode) << " prompt of "
                                                        << prompts[w].ids.size() << " tokens";
  engine.wait_idle();
  const auto stats = engine.stats().to_json();
  EXPECT_EQ(stats["captures_after_seal"], 0);
  if (mode == Mode::graphs) EXPECT_GT(int(stats["decode_graph_replays"]), 0) << "decode steps replay graphs";
  // The 40-token prompt prefills in 16-token chunks while the others decode: mixed batches,
  // replayed through the piecewise graphs.
  if (mode == Mode::mixed_chunk16) EXPECT_GT(int(stats["piecewise_replays_mixed"]), 0);
}

INSTANTIATE_TEST_SUITE_P(
    TinyMoe, MoeHfParity,
    ::testing::Combine(::testing::Values("tiny-qwen3-moe", "tiny-qwen2-moe", "tiny-mixtral"),
                       ::testing::Values(Mode::graphs, Mode::eager, Mode::mixed_chunk16)),
    [](const ::testing::TestParamInfo<MoeHfParity::ParamType>& info) {
      std::string n = std::get<0>(info.param).substr(5) + "_" + mode_name(std::get<1>(info.param));
      for (char& ch : n)
        if (ch == '-') ch = '_';
      return n;
    });

}  // namespace
}  // namespace seam::test
