// FP8 mixture-of-experts checkpoints on the GPU against the CPU backend (the definition): the
// tiny transformers-made MoE models of tests/data/hf_tiny, their experts written F8_E4M3 by
// model/fp8_export (compressed-tensors, per-channel and 128x128-block scales) and every other
// linear float (tests/fp8_moe_folders.h). The experts are dequantized at load (model/
// fp8_dequant.h), so the GPU runs the float MoE kernels on them and must agree with the CPU as
// on a float model (cuda_tiny_families_test's bounds), in float32:
//  - each prompt's last-token logits within 1e-4 relative of the CPU's;
//  - the 32 greedy ids of the three prompts, submitted together, equal to the CPU engine's, with
//    CUDA graphs and without.
// Also the whole model weight-only FP8 (ct-w8a16: attention and experts dequantized at load, so
// float linears too), under the same bounds. (A W8A8 folder with the attention FP8 runs the FP8
// linears, whose GPU-vs-CPU agreement is cuda_fp8_model_parity_test's business.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/backend_factory.h"
#include "engine/engine.h"
#include "engine/engine_bench_access.h"
#include "runtime/model_runner.h"
#include "fp8_moe_folders.h"
#include "hf_reference.h"

namespace seam::test {
namespace {

EngineConfig config(const std::string& dir, Device device) {
  EngineConfig cfg;
  cfg.model_path = dir;
  cfg.device = device;
  cfg.dtype = "float32";
  cfg.context_length = 256;
  cfg.max_total_tokens = 2048;
  return cfg;
}

class Fp8MoeOnGpu : public ::testing::TestWithParam<std::string> {};

TEST_P(Fp8MoeOnGpu, LogitsAndGreedyIdsMatchTheCpuBackend) {
  std::string why;
  if (!cuda_device_available(&why)) GTEST_SKIP() << "no GPU: " << why;
  const std::vector<RefPrompt> prompts = load_hf_reference(hf_tiny(GetParam()));
  ASSERT_FALSE(prompts.empty());
  // Experts-only FP8 folders (channel and block scales), and the whole model weight-only FP8
  // (ct-w8a16: attention and experts dequantized at load).
  const std::vector<std::pair<std::string, std::string>> folders = {
      {"experts FP8, channel scales", with_only_experts_fp8(export_moe(GetParam(), Fp8ExportFormat::ct_channel))},
      {"experts FP8, block scales", with_only_experts_fp8(export_moe(GetParam(), Fp8ExportFormat::ct_block))},
      {"weight-only FP8", export_moe(GetParam(), Fp8ExportFormat::ct_w8a16)}};
  for (const auto& [label, dir] : folders) {
    SCOPED_TRACE(GetParam() + " " + label);
    const auto cpu_logits = engine_prompt_logits(config(dir, Device::cpu), prompts);
    const auto gpu_logits = engine_prompt_logits(config(dir, Device::cuda), prompts);
    ASSERT_EQ(gpu_logits.size(), cpu_logits.size());
    for (size_t i = 0; i < prompts.size(); ++i)
      EXPECT_LT(rel_err(gpu_logits[i], cpu_logits[i]), 1e-4) << "prompt of " << prompts[i].ids.size();

    const auto cpu_ids = engine_greedy_ids(config(dir, Device::cpu), prompts);
    EngineConfig graphs = config(dir, Device::cuda), eager = graphs;
    eager.disable_cuda_graph = true;
    EXPECT_EQ(engine_greedy_ids(graphs, prompts), cpu_ids) << "with CUDA graphs";
    EXPECT_EQ(engine_greedy_ids(eager, prompts), cpu_ids) << "without CUDA graphs";
  }
}

INSTANTIATE_TEST_SUITE_P(HfTiny, Fp8MoeOnGpu, ::testing::Values("tiny-qwen3-moe", "tiny-qwen2-moe", "tiny-mixtral"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

}  // namespace
}  // namespace seam::test
