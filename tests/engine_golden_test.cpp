// Every golden case of stories260K reproduced id for id by the engine, under
// every scheduling configuration the core and scheduler issues name.
#include <gtest/gtest.h>

#include <thread>

#include "golden.h"

namespace seam::test {
namespace {

// Runs all cases (all submitted at once) and checks every id.
nlohmann::json run_all(const EngineConfig& cfg, const std::vector<GoldenCase>& cases) {
  Engine engine(cfg);
  expect_golden_outputs(engine, cases);
  engine.wait_idle();
  auto stats = engine.stats().to_json();
  EXPECT_EQ(stats["budget_violations"], 0);
  EXPECT_EQ(stats["captures_after_seal"], 0);
  EXPECT_EQ(stats["running_requests"], 0);
  // Every slot is free or held by the prefix cache.
  EXPECT_EQ(int(stats["kv_free_tokens"]) + int(stats["kv_cached_tokens"]), int(stats["kv_pool_tokens"]));
  return stats;
}

TEST(EngineGolden, EachCaseAlone) {
  Engine engine(cpu_engine_config());
  for (const auto& c : golden_cases()) {
    auto r = engine.generate({c.prompt_ids}, {golden_params(c)});
    EXPECT_EQ(r[0].output_ids, c.generated_ids) << c.id;
    EXPECT_EQ(r[0].text, c.generated_text) << c.id;
    EXPECT_EQ(r[0].finish_reason, FinishReason::length) << c.id;
  }
}

TEST(EngineGolden, PromptIdsMatchTokenizer) {
  Engine engine(cpu_engine_config());
  for (const auto& c : golden_cases()) EXPECT_EQ(engine.tokenizer().encode(c.prompt, true), c.prompt_ids) << c.id;
}

TEST(EngineGolden, AllCasesInOneBatch) { run_all(cpu_engine_config(), golden_cases()); }

class ChunkSizes : public ::testing::TestWithParam<std::tuple<int, bool>> {};
TEST_P(ChunkSizes, AllCases) {
  auto cfg = cpu_engine_config();
  cfg.chunked_prefill_size = std::get<0>(GetParam());
  cfg.enable_mixed_chunk = std::get<1>(GetParam());
  auto stats = run_all(cfg, golden_cases());
  // With 16- and 64-token chunks the prompts (about 330 tokens) take several
  // steps, so early requests decode while later ones prefill.
  if (cfg.enable_mixed_chunk && (cfg.chunked_prefill_size == 16 || cfg.chunked_prefill_size == 64))
    EXPECT_GT(stats["mixed"], 0);
  if (!cfg.enable_mixed_chunk) EXPECT_EQ(stats["mixed"], 0);
}
INSTANTIATE_TEST_SUITE_P(Scheduler, ChunkSizes,
                         ::testing::Combine(::testing::Values(1, 7, 16, 64, 8192), ::testing::Bool()));

class MaxRunning : public ::testing::TestWithParam<int> {};
TEST_P(MaxRunning, AllCases) {
  auto cfg = cpu_engine_config();
  cfg.max_running_requests = GetParam();
  auto stats = run_all(cfg, golden_cases());
  EXPECT_LE(int(stats["peak_running_requests"]), GetParam());
}
INSTANTIATE_TEST_SUITE_P(Scheduler, MaxRunning, ::testing::Values(1, 3, 64));

TEST(EngineGolden, SmallKvPoolForcesRetractions) {
  auto cfg = cpu_engine_config();
  cfg.max_total_tokens = 520;  // the longest case needs 512; all together need far more
  cfg.enable_mixed_chunk = true;
  cfg.chunked_prefill_size = 64;
  auto stats = run_all(cfg, golden_cases());
  EXPECT_GT(stats["retractions"], 0);
}

TEST(EngineGolden, SmallKvPoolWithoutPrefixCache) {
  auto cfg = cpu_engine_config();
  cfg.max_total_tokens = 520;
  cfg.disable_radix_cache = true;
  auto stats = run_all(cfg, golden_cases());
  EXPECT_GT(stats["retractions"], 0);
  EXPECT_EQ(stats["kv_free_tokens"], stats["kv_pool_tokens"]);
}

TEST(EngineGolden, PrefixCacheSharesPrefixes) {
  // The "long" cases extend a shorter story; run the cases twice so the second
  // round finds every prompt cached.
  auto cfg = cpu_engine_config();
  Engine engine(cfg);
  auto cases = golden_cases();
  for (int round = 0; round < 2; ++round) {
    for (const auto& c : cases) {
      auto r = engine.generate({c.prompt_ids}, {golden_params(c)});
      EXPECT_EQ(r[0].output_ids, c.generated_ids) << c.id << " round " << round;
    }
  }
  engine.wait_idle();
  EXPECT_GT(engine.stats().to_json()["prefix_cache_hit_tokens"], 0);
}

TEST(EngineGolden, SubmittedOneByOneWhileOthersDecode) {
  auto cfg = cpu_engine_config();
  cfg.enable_mixed_chunk = true;
  cfg.chunked_prefill_size = 16;
  Engine engine(cfg);
  auto cases = golden_cases();
  std::vector<std::vector<int32_t>> out(cases.size());
  std::vector<std::atomic<bool>> done(cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    engine.submit(cases[i].prompt_ids, golden_params(cases[i]), [&, i](const RequestOutput& o) {
      out[i].insert(out[i].end(), o.new_ids.begin(), o.new_ids.end());
      if (o.finished) done[i] = true;
    });
    // Let the earlier requests reach decode before the next arrives.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  engine.wait_idle();
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_TRUE(done[i]);
    EXPECT_EQ(out[i], cases[i].generated_ids) << cases[i].id;
  }
  EXPECT_GT(engine.stats().to_json()["mixed"], 0);
}

TEST(EngineGolden, GraphsOnAndOffAgree) {
  for (bool disable : {false, true}) {
    for (int chunk : {16, 64}) {
      auto cfg = cpu_engine_config();
      cfg.enable_mixed_chunk = true;
      cfg.chunked_prefill_size = chunk;
      cfg.disable_cuda_graph = disable;
      auto stats = run_all(cfg, golden_cases());
      if (!disable) {
        EXPECT_GT(stats["piecewise_replays"], 0);
        EXPECT_GT(stats["decode_graph_replays"], 0);
        EXPECT_GT(stats["captured_piecewise_keys"], 0);
        EXPECT_GT(stats["piecewise_replays_mixed"], 0);  // MIXED batches replay the EXTEND-captured keys
      } else {
        EXPECT_EQ(stats["piecewise_replays"], 0);
        EXPECT_EQ(stats["decode_graph_replays"], 0);
      }
      EXPECT_EQ(stats["captures_after_seal"], 0);
    }
  }
}

}  // namespace
}  // namespace seam::test
