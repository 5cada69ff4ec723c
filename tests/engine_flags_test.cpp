// The engine flags as the CLI parses them and resolve_setup validates them: here the
// start-up GEMM tuning flags (--gemm-autotune, its knobs and its cache file), off by default.
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
