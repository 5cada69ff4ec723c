// Derived engine settings: dtype, scheduler limits, graph keys and the KV pool
// size, computed once from the validated EngineConfig and the model.
#pragma once
#include <cstddef>

#include "engine/engine_config.h"
#include "model/model_config.h"
#include "runtime/model_runner.h"
#include "scheduler/scheduler.h"

namespace seam {

struct ResolvedSetup {
  DType dtype = DType::f32;
  int max_context = 0;
  SchedulerConfig scheduler;
  GraphConfig graphs;
  bool gemm_autotune = false;
  Backend::GemmTuning gemm_tuning;  // used when gemm_autotune
};

ResolvedSetup resolve_setup(const EngineConfig& cfg, const ModelConfig& model, Device device);

// KV slots (tokens, scratch slot included) the pool gets.
int kv_pool_slots(const EngineConfig& cfg, const ResolvedSetup& setup, Device device, size_t free_at_start,
                  size_t free_now, size_t weight_bytes, size_t bytes_per_slot);

}  // namespace seam
