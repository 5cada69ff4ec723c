// Issue 24's families end to end on the GPU against the CPU backend (the definition), on the tiny
// checkpoints of tests/data/hf_tiny, in float32: the decode fusions (Gemma 3 and Qwen3-MoE's
// fused q/k norm + RoPE + KV store, the split-merging decode attention) inside the engine with
// CUDA graphs on and off.
//  - each prompt's last-token logits (an EXTEND forward) within 1e-4 relative of the CPU's;
//  - the first 32 greedy ids of the three prompts, submitted together, equal to the CPU engine's,
//    with graphs (decode steps replayed from the graphs) and without.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/backend_factory.h"
#include "engine/engine.h"
#include "engine/engine_bench_access.h"
#include "runtime/model_runner.h"
#include "hf_reference.h"
#include "test_util.h"

namespace seam::test {
namespace {

std::string tiny_dir(const std::string& name) { return std::string(SEAM_SOURCE_DIR) + "/tests/data/hf_tiny/" + name; }

EngineConfig config(const std::string& dir, Device device) {
  EngineConfig cfg;
  cfg.model_path = dir;
  cfg.device = device;
  cfg.dtype = "float32";
  cfg.context_length = 256;
  cfg.max_total_tokens = 2048;
  return cfg;
}

class TinyFamilyOnGpu : public ::testing::TestWithParam<std::string> {};

TEST_P(TinyFamilyOnGpu, LogitsAndGreedyIdsMatchTheCpuBackend) {
  std::string why;
  if (!cuda_device_available(&why)) GTEST_SKIP() << "no GPU: " << why;
  const std::string dir = tiny_dir(GetParam());
  const std::vector<RefPrompt> prompts = load_hf_reference(dir);
  ASSERT_FALSE(prompts.empty());
  const auto cpu_logits = engine_prompt_logits(config(dir, Device::cpu), prompts);
  const auto gpu_logits = engine_prompt_logits(config(dir, Device::cuda), prompts);
  ASSERT_EQ(gpu_logits.size(), cpu_logits.size());
  for (size_t i = 0; i < prompts.size(); ++i)
    EXPECT_LT(rel_err(gpu_logits[i], cpu_logits[i]), 1e-4) << GetParam() << " prompt of " << prompts[i].ids.size();

  const auto cpu_ids = engine_greedy_ids(config(dir, Device::cpu), prompts);
  EngineConfig graphs = config(dir, Device::cuda), eager = graphs;
  eager.disable_cuda_graph = true;
  EXPECT_EQ(engine_greedy_ids(graphs, prompts), cpu_ids) << GetParam() << " with CUDA graphs";
  EXPECT_EQ(engine_greedy_ids(eager, prompts), cpu_ids) << GetParam() << " without CUDA graphs";
}

INSTANTIATE_TEST_SUITE_P(HfTiny, TinyFamilyOnGpu,
                         ::testing::Values("tiny-gemma2", "tiny-gemma3", "tiny-phi3", "tiny-phi4", "tiny-mistral",
                                           "tiny-qwen3-moe"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

}  // namespace
}  // namespace seam::test
