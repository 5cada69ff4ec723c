// The engine flags shared by `generate`, `serve` and `bench-one-batch`
// (sglang's names), bound to an EngineConfig.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "engine/engine_config.h"

namespace seam::cli {

struct EngineFlags {
  EngineConfig config;
  std::string device = "auto";
  std::string log_level = "info";  // --log-level: debug | info | warning | error
  // Adds the flags to `app`; call finish() after parsing.
  void add_to(CLI::App& app);
  // Resolves --device auto and other derived values, sets the log level; throws seam::Error.
  EngineConfig finish();
};

}  // namespace seam::cli
