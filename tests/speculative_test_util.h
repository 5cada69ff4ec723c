// Shared by the speculative-decoding tests (speculative_decoding_test, speculative_backoff_test):
// an NGRAM engine config, the KV-pool-whole check after a run, and the golden batch with both.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "golden.h"

namespace seam::test {

inline EngineConfig ngram_config(int k) {
  EngineConfig cfg = cpu_engine_config();
  cfg.speculative_algorithm = "NGRAM";
  cfg.speculative_num_draft_tokens = k;
  return cfg;
}

inline void expect_kv_whole(const nlohmann::json& stats) {
  EXPECT_EQ(stats["running_requests"], 0);
  EXPECT_EQ(stats["captures_after_seal"], 0);
  EXPECT_EQ(stats["budget_violations"], 0);
  // Every slot is free or held by the prefix cache: no rejected draft's slot leaked.
  EXPECT_EQ(int(stats["kv_free_tokens"]) + int(stats["kv_cached_tokens"]), int(stats["kv_pool_tokens"]));
}

// All golden cases at once; checks every id and text, returns the stats.
inline nlohmann::json run_golden(const EngineConfig& cfg) {
  Engine engine(cfg);
  expect_golden_outputs(engine, golden_cases());
  engine.wait_idle();
  auto stats = engine.stats().to_json();
  expect_kv_whole(stats);
  return stats;
}

}  // namespace seam::test
