// EngineBenchAccess: the benchmarking face of the engine. Benchmarks and parity
// tests that drive forward steps directly reach the ModelRunner through it; the
// serving face (engine/engine.h) hands out no internals. Only while no request
// is in flight (the engine loop then never touches the runner).
#pragma once
#include <functional>

#include "engine/engine.h"

namespace seam {

class ModelRunner;

class EngineBenchAccess {
 public:
  // Rank 0's runner (the only one with TP 1).
  static ModelRunner& runner(Engine& engine);
  // Runs job(runner) on every tensor-parallel rank of this node at once (rank 0's on the
  // calling thread) and returns when all are done; TP 1: job(runner(engine)). A job that steps
  // the model must step every rank alike (their collectives meet); it may write results only
  // when given runner(engine).
  static void on_every_rank(Engine& engine, const std::function<void(ModelRunner&)>& job);
};

}  // namespace seam
