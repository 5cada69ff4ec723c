// The engine flags as the CLI parses them and resolve_setup validates them: here the
// start-up GEMM tuning flags (--gemm-autotune, its knobs and its cache file), off by default,
// the output overlap switch, and the speculative decoding flags.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <string>

#include "backend/gemm_tuning_cache.h"
#include "cli/engine_flags.h"
#include "core/error.h"
#include "engine/engine_setup.h"
#include "model/model_config.h"
#include "test_util.h"

namespace seam::test {
namespace {

// Parses `args` as `seam generate` would and resolves the setup for the cpu.
ResolvedSetup setup_for(const std::string& args) {
  CLI::App app("test");
  cli::EngineFlags flags;
  flags.add_to(app);
  app.parse("--model-path " + stories_dir() + " --device cpu " + args, false);
  const EngineConfig cfg = flags.finish();
  return resolve_setup(cfg, load_model_config(cfg.model_path), cfg.device);
}

std::string error_of(const std::string& args) {
  try {
    setup_for(args);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(EngineFlagsGemmAutotune, OffByDefault) {
  const ResolvedSetup s = setup_for("");
  EXPECT_FALSE(s.gemm_autotune);
}

TEST(EngineFlagsGemmAutotune, FlagTurnsItOnWithDefaults) {
  const ResolvedSetup s = setup_for("--gemm-autotune");
  EXPECT_TRUE(s.gemm_autotune);
  EXPECT_EQ(s.gemm_tuning.min_rows, Backend::GemmTuning{}.min_rows);
  EXPECT_EQ(s.gemm_tuning.n_candidates, Backend::GemmTuning{}.n_candidates);
  EXPECT_EQ(Backend::GemmTuning{}.min_rows, 256);
  EXPECT_EQ(Backend::GemmTuning{}.n_candidates, 8);
}

TEST(EngineFlagsGemmAutotune, KnobsReachTheSetup) {
  const ResolvedSetup s = setup_for("--gemm-autotune --gemm-autotune-min-rows 512 --gemm-autotune-candidates 4");
  EXPECT_TRUE(s.gemm_autotune);
  EXPECT_EQ(s.gemm_tuning.min_rows, 512);
  EXPECT_EQ(s.gemm_tuning.n_candidates, 4);
}

TEST(EngineFlagsGemmAutotune, KnobsWithoutTheFlagAreAnError) {
  EXPECT_NE(error_of("--gemm-autotune-min-rows 512").find("need --gemm-autotune"), std::string::npos);
  EXPECT_NE(error_of("--gemm-autotune-candidates 4").find("need --gemm-autotune"), std::string::npos);
}

TEST(EngineFlagsGemmAutotune, OutOfRangeValuesAreErrors) {
  EXPECT_NE(error_of("--gemm-autotune --gemm-autotune-min-rows -1").find("--gemm-autotune-min-rows must be"),
            std::string::npos);
  EXPECT_NE(error_of("--gemm-autotune --gemm-autotune-candidates 33").find("--gemm-autotune-candidates must be"),
            std::string::npos);
  EXPECT_NE(error_of("--gemm-autotune --gemm-autotune-candidates -2").find("--gemm-autotune-candidates must be"),
            std::string::npos);
  EXPECT_EQ(error_of("--gemm-autotune --gemm-autotune-candidates 32 --gemm-autotune-min-rows 1"), "");
}

TEST(EngineFlagsGemmAutotune, CacheDefaultsToTheUserCacheFolderAndCanBeNamedOrTurnedOff) {
  const ResolvedSetup def = setup_for("--gemm-autotune");
  EXPECT_EQ(def.gemm_tuning.cache_path, GemmTuningCache::default_path());
  EXPECT_EQ(setup_for("--gemm-autotune --gemm-autotune-cache /tmp/x/tune.json").gemm_tuning.cache_path,
            "/tmp/x/tune.json");
  EXPECT_EQ(setup_for("--gemm-autotune --gemm-autotune-cache none").gemm_tuning.cache_path, "");
  EXPECT_EQ(setup_for("").gemm_tuning.cache_path, "");  // no tuning, no cache
  EXPECT_NE(error_of("--gemm-autotune-cache /tmp/x.json").find("--gemm-autotune-cache needs --gemm-autotune"),
            std::string::npos);
}

TEST(EngineFlagsGemmAutotune, NonNumericValueIsAParseError) {
  CLI::App app("test");
  cli::EngineFlags flags;
  flags.add_to(app);
  EXPECT_THROW(app.parse("--model-path x --gemm-autotune-min-rows many", false), CLI::ParseError);
}

}  // namespace
}  // namespace seam::test

namespace seam::test {
namespace {

// Speculative decoding flags (sglang's names): off by default; NGRAM resolves its knobs and
// widens the decode keys to cover verify rows; bad values name the flag.
TEST(EngineFlagsSpeculative, OffByDefault) {
  const ResolvedSetup s = setup_for("");
  EXPECT_FALSE(s.speculative.enabled());
  EXPECT_EQ(s.speculative.max_verify_rows(), 0);
}

TEST(EngineFlagsSpeculative, NgramResolves) {
  const ResolvedSetup s = setup_for(
      "--speculative-algorithm NGRAM --speculative-num-draft-tokens 3 --speculative-max-batch-size 4 "
      "--speculative-ngram-min-match-window-size 2 --speculative-ngram-max-match-window-size 5");
  EXPECT_EQ(s.speculative.algorithm, SpeculativeAlgorithm::ngram);
  EXPECT_EQ(s.speculative.n_draft_tokens, 3);
  EXPECT_EQ(s.speculative.max_batch_size, 4);
  EXPECT_EQ(s.speculative.ngram_min_window, 2);
  EXPECT_EQ(s.speculative.ngram_max_window, 5);
  // A verify batch of 4 rows of 4 tokens is the decode key 16: captured at start-up.
  EXPECT_EQ(s.graphs.decode_buckets.back(), 16);
  const ResolvedSetup d = setup_for("--speculative-algorithm NGRAM");
  EXPECT_EQ(d.speculative.n_draft_tokens, 4);
  // The H200 measurement (engine_setup.h): drafting pays up to batch 16.
  EXPECT_EQ(d.speculative.max_batch_size, 16);
  EXPECT_EQ(d.graphs.decode_buckets.back(), 80);
  // The back-off is on by default, capped at 64 steps; --speculative-disable-backoff turns it off.
  EXPECT_EQ(d.speculative.max_backoff_steps, 64);
  EXPECT_EQ(setup_for("--speculative-algorithm NGRAM --speculative-disable-backoff").speculative.max_backoff_steps, 0);
}

TEST(EngineFlagsSpeculative, BadValuesNameTheFlag) {
  EXPECT_NE(error_of("--speculative-algorithm EAGLE").find("--speculative-algorithm"), std::string::npos);
  EXPECT_NE(error_of("--speculative-num-draft-tokens 4").find("need --speculative-algorithm"), std::string::npos);
  EXPECT_NE(error_of("--speculative-algorithm NGRAM --speculative-num-draft-tokens 99")
                .find("--speculative-num-draft-tokens"),
            std::string::npos);
  EXPECT_NE(error_of("--speculative-algorithm NGRAM --speculative-ngram-min-match-window-size 5 "
                     "--speculative-ngram-max-match-window-size 2")
                .find("--speculative-ngram-min-match-window-size"),
            std::string::npos);
  EXPECT_NE(error_of("--speculative-draft-model-path /x").find("STANDALONE"), std::string::npos);
  EXPECT_NE(error_of("--speculative-disable-backoff").find("--speculative-disable-backoff needs"), std::string::npos);
  EXPECT_NE(error_of("--speculative-algorithm STANDALONE").find("needs --speculative-draft-model-path"),
            std::string::npos);
}

// Parses `args` as `seam generate` would: the EngineConfig.
EngineConfig config_for(const std::string& args) {
  CLI::App app("test");
  cli::EngineFlags flags;
  flags.add_to(app);
  app.parse("--model-path " + stories_dir() + " --device cpu " + args, false);
  return flags.finish();
}

// The serving step's output handoff overlaps the next step by default (measured faster on the
// H200); --disable-output-overlap hands outputs over between steps; --enable-output-overlap is
// accepted as the default.
TEST(EngineFlagsOutputOverlap, OnByDefaultAndTheDisableFlagTurnsItOff) {
  EXPECT_TRUE(config_for("").enable_output_overlap);
  EXPECT_TRUE(config_for("--enable-output-overlap").enable_output_overlap);
  EXPECT_FALSE(config_for("--disable-output-overlap").enable_output_overlap);
}

TEST(EngineFlagsLogprobs, OnByDefaultAndTheFlagTurnsThemOff) {
  EXPECT_FALSE(config_for("").disable_logprobs);
  EXPECT_TRUE(config_for("--disable-logprobs").disable_logprobs);
}

}  // namespace
}  // namespace seam::test
