// seam on the GPU against Hugging Face transformers on random-weight models of
// real shapes (made by tools/make_random_models.py on the GPU machine; the
// folder is given by SEAM_HF_MODELS). Last-token logits within bf16 tolerance
// for prompts of 1, 17 and 1000 tokens, alone and batched together, and the
// first 32 greedy ids.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "backend/backend_factory.h"
#include "engine/engine.h"
#include "runtime/model_runner.h"
#include "test_util.h"

namespace seam::test {
namespace {

struct RefPrompt {
  std::vector<int32_t> ids, greedy;
  std::vector<float> logits;
};

double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    num += double(a[i] - b[i]) * (a[i] - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

class HfParity : public ::testing::TestWithParam<std::string> {};

TEST_P(HfParity, LogitsAndGreedyIds) {
  std::string why;
  if (!cuda_device_available(&why)) GTEST_SKIP() << "no GPU: " << why;
  const char* root = std::getenv("SEAM_HF_MODELS");
  if (!root) GTEST_SKIP() << "SEAM_HF_MODELS is not set (tools/make_random_models.py makes the models)";
  const std::string dir = std::string(root) + "/" + GetParam();
  if (!std::filesystem::exists(dir + "/reference.json")) GTEST_SKIP() << dir << " has no reference.json";
  auto ref = nlohmann::json::parse(read_file(dir + "/reference.json"));
  std::vector<RefPrompt> prompts;
  for (auto& p : ref["prompts"])
    prompts.push_back({p["ids"].get<std::vector<int32_t>>(), p["greedy_ids"].get<std::vector<int32_t>>(),
                       p["last_logits"].get<std::vector<float>>()});
  EngineConfig cfg;
  cfg.model_path = dir;
  cfg.device = Device::cuda;
  cfg.dtype = "bfloat16";
  cfg.context_length = 2048;
  cfg.max_running_requests = 8;
  cfg.chunked_prefill_size = 4096;
  cfg.max_total_tokens = 16384;
  cfg.mem_fraction_static = 0.5;
  Engine engine(cfg);
  ModelRunner& runner = engine.runner_for_benchmark();
  const int V = engine.model_config().vocab_size;

  // Logits: each prompt alone, then all three in one EXTEND batch.
  auto run = [&](const std::vector<size_t>& which) {
    ForwardBatch fb;
    fb.mode = ForwardMode::extend;
    fb.qo_indptr.push_back(0);
    int row = 0;
    for (size_t w : which) {
      const auto& ids = prompts[w].ids;
      std::vector<int32_t> slots(ids.size());
      for (size_t p = 0; p < ids.size(); ++p) slots[p] = int32_t(1 + row * 2048 + p);
      runner.kv().set_slots(row, 0, slots.data(), int(ids.size()));
      for (size_t p = 0; p < ids.size(); ++p) {
        fb.input_ids.push_back(ids[p]);
        fb.positions.push_back(int32_t(p));
        fb.out_cache_loc.push_back(slots[p]);
      }
      fb.qo_indptr.push_back(fb.qo_indptr.back() + int32_t(ids.size()));
      fb.seq_lens.push_back(int32_t(ids.size()));
      fb.req_rows.push_back(row++);
      fb.sampling.push_back(SeqSampling{});
    }
    fb.n_prefill_seqs = int(which.size());
    std::vector<int32_t> sampled;
    runner.forward(fb, sampled);
    return runner.last_logits(int(which.size()));
  };
  for (size_t w = 0; w < prompts.size(); ++w) {
    auto logits = run({w});
    const double e = rel_err(logits, prompts[w].logits);
    std::printf("%s prompt %zu tokens: logits rel err %.4g\n", GetParam().c_str(), prompts[w].ids.size(), e);
    EXPECT_LT(e, 2e-2) << "prompt of " << prompts[w].ids.size() << " tokens";
  }
  auto batched = run({0, 1, 2});
  for (size_t w = 0; w < 3; ++w) {
    std::vector<float> row(batched.begin() + long(w) * V, batched.begin() + long(w + 1) * V);
    const double e = rel_err(row, prompts[w].logits);
    std::printf("%s batched prompt %zu tokens: logits rel err %.4g\n", GetParam().c_str(), prompts[w].ids.size(), e);
    EXPECT_LT(e, 2e-2);
  }
  // Greedy ids through the whole engine (graphs, scheduler).
  std::vector<std::vector<int32_t>> ps;
  std::vector<SamplingParams> params;
  for (auto& p : prompts) {
    ps.push_back(p.ids);
    SamplingParams sp;
    sp.temperature = 0;
    sp.max_new_tokens = 32;
    sp.ignore_eos = true;
    params.push_back(sp);
  }
  auto results = engine.generate(ps, params);
  for (size_t w = 0; w < prompts.size(); ++w) {
    size_t same = 0;
    while (same < 32 && results[w].output_ids[same] == prompts[w].greedy[same]) ++same;
    std::printf("%s prompt %zu tokens: first %zu of 32 greedy ids equal\n", GetParam().c_str(),
                prompts[w].ids.size(), same);
    EXPECT_EQ(results[w].output_ids, prompts[w].greedy);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, HfParity,
                         ::testing::Values("llama-3.1-8b", "llama-3.2-1b", "qwen2.5-0.5b", "qwen3-0.6b"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s) c = std::isalnum(uint8_t(c)) ? c : '_';
                           return s;
                         });

}  // namespace
}  // namespace seam::test
