// EngineBenchAccess: the benchmarking face of the engine. Benchmarks and parity
// tests that drive forward steps directly reach the ModelRunner through it; the
// serving face (engine/engine.h) hands out no internals. Only while no request
// is in flight (the engine loop then never touches the runner).
#pragma once
#include "engine/engine.h"

namespace seam {

class ModelRunner;

class EngineBenchAccess {
 public:
  static ModelRunner& runner(Engine& engine);
};

}  // namespace seam
