// Derived engine settings: dtype, scheduler limits, graph keys and the KV pool
// size, computed once from the validated EngineConfig and the model.
#pragma once
#include <cstddef>
#include <string>

#include "engine/engine_config.h"
#include "model/model_config.h"
#include "runtime/model_runner.h"
#include "scheduler/scheduler.h"

namespace seam {

// Speculative decoding, resolved (engine/speculative_decoder.h uses it).
enum class SpeculativeAlgorithm { none, ngram, standalone };

// The off-switch: no drafting while more requests than this decode (--speculative-max-batch-size
// when not given). Drafting pays while (1 + a) * t_decode(B) > t_verify(B, k) for the accept
// length a the requests reach; the verify cost grows with the B * (k + 1) rows while the decode
// step stays near one weight read, so past some batch size verification costs more than the
// accepted tokens save. scripts/gpu_spec.sh measures t_verify / t_decode per batch size on the
// GPU and prints "off-switch: ..." with the batch size where it should engage: set this from
// that line (docs/performance.md keeps the table). 8 until measured.
constexpr int default_speculative_max_batch_size = 8;

struct SpeculativeSetup {
  SpeculativeAlgorithm algorithm = SpeculativeAlgorithm::none;
  int n_draft_tokens = 0;      // k: drafts per verify row (a row is k + 1 tokens)
  int n_steps = 0;             // draft-model steps (STANDALONE)
  std::string draft_model_path;
  int ngram_min_window = 1, ngram_max_window = 12;
  int max_batch_size = 0;      // no drafts while more requests decode
  bool enabled() const { return algorithm != SpeculativeAlgorithm::none; }
  // Most one-token rows a step can hold: plain decode rows, or verify rows' sub-rows.
  int max_verify_rows() const { return enabled() ? max_batch_size * (n_draft_tokens + 1) : 0; }
};

struct ResolvedSetup {
  DType dtype = DType::f32;
  int max_context = 0;
  SchedulerConfig scheduler;
  GraphConfig graphs;
  SpeculativeSetup speculative;
  bool gemm_autotune = false;
  Backend::GemmTuning gemm_tuning;  // used when gemm_autotune
};

ResolvedSetup resolve_setup(const EngineConfig& cfg, const ModelConfig& model, Device device);

// KV slots (tokens, scratch slot included) the pool gets.
int kv_pool_slots(const EngineConfig& cfg, const ResolvedSetup& setup, Device device, size_t free_at_start,
                  size_t free_now, size_t weight_bytes, size_t bytes_per_slot);

}  // namespace seam
