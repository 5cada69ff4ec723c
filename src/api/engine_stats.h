// EngineStats: a typed snapshot of the engine's counters and gauges, and ONE
// field table that says, per stat, its `--stats` JSON key, its Prometheus
// family (and label), its kind and help text, and how to read it. Both the
// generate command's `--stats` JSON (to_json) and the server's /metrics page
// are generated from the table, so a key is spelled once.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace seam {

struct EngineStats {
  // steps, by batch mode (scheduler)
  uint64_t steps = 0, steps_extend = 0, steps_decode = 0, steps_mixed = 0;
  uint64_t retractions = 0, prefix_cache_hit_tokens = 0, prefill_tokens = 0;
  uint64_t budget_violations = 0;  // must stay 0
  // schedule() calls that found nothing to run and changed nothing while requests waited; the
  // loop then sleeps until a submit or an abort (a spinning loop would count thousands).
  uint64_t stalled_schedules = 0;
  // requests and KV
  uint64_t peak_running_requests = 0, running_requests = 0, waiting_requests = 0;
  uint64_t kv_pool_tokens = 0, kv_free_tokens = 0, kv_cached_tokens = 0;
  uint64_t finished_requests = 0, prompt_tokens = 0, generated_tokens = 0;
  // graph paths (runner)
  uint64_t decode_graph_replays = 0, piecewise_replays = 0, piecewise_replays_extend = 0,
           piecewise_replays_mixed = 0, eager_steps = 0;
  std::map<std::string, uint64_t> eager_by_reason;
  uint64_t padding_tokens = 0, captured_decode_keys = 0, captured_piecewise_keys = 0, captures_after_seal = 0;
  double decode_capture_s = 0, piecewise_capture_s = 0;
  // Speculative decoding: drafts proposed and accepted (over verify rows), rows verified,
  // steps with no drafting because the batch was too large, and a histogram of accepted
  // drafts per verify row ("0" .. "k"); steps with verify rows by graph path. Back-off steps:
  // decode rows that drafted nothing because their request was backing off after a verify row
  // that accepted nothing (engine/draft_backoff.h), one per request and step.
  uint64_t speculative_proposed_tokens = 0, speculative_accepted_tokens = 0, speculative_verify_rows = 0,
           speculative_off_steps = 0, speculative_backoff_steps = 0;
  std::map<std::string, uint64_t> speculative_accept_length;
  uint64_t verify_steps_decode_graph = 0, verify_steps_piecewise = 0, verify_steps_eager = 0;
  uint64_t decode_graph_bytes = 0, piecewise_graph_bytes = 0;
  // Host time per step, means over steps that ran a batch (architecture.md
  // "Host time per step"); the phases add up to step_wall_ms_per_step.
  double host_schedule_ms_per_step = 0, host_prepare_ms_per_step = 0, host_launch_ms_per_step = 0,
         host_wait_ms_per_step = 0, host_process_ms_per_step = 0, host_detokenize_ms_per_step = 0,
         host_handoff_ms_per_step = 0;
  double forward_ms_per_step = 0;  // prepare + launch + wait: the whole ModelRunner::forward
  double step_wall_ms_per_step = 0, gpu_ms_per_step = 0, gpu_busy_fraction = 0;
  // Structured output. Compiles run on the submitting threads (a cache hit costs ~0); the
  // masks are built on the engine thread while the device runs the step's forward: the
  // exposed part is the mask time after the device had finished the forward (all of it on
  // the CPU backend). A hidden step: masks ready before the forward was done.
  uint64_t grammar_requests = 0;  // constrained requests admitted
  double grammar_compile_ms_total = 0;
  uint64_t grammar_cache_hits = 0, grammar_cache_misses = 0, grammar_cache_bytes = 0;
  uint64_t grammar_mask_steps = 0, grammar_mask_hidden_steps = 0, grammar_masked_rows_total = 0;
  double grammar_mask_ms_total = 0, grammar_mask_exposed_ms_total = 0;
  // Tensor parallelism (architecture.md "Tensor parallelism"): the ranks, and each rank's
  // memory by rank ("0" .. "N-1"; every rank of every node), gathered at start-up.
  uint64_t tp_size = 1;
  std::map<std::string, uint64_t> tp_rank_weight_bytes, tp_rank_kv_bytes, tp_rank_graph_bytes;

  // The `--stats` JSON object: every keyed field of the table.
  nlohmann::json to_json() const;
};

enum class StatKind { counter, gauge };

// One scalar stat. Fields of one Prometheus family are consecutive in the table.
struct StatField {
  const char* key;          // the --stats JSON key; nullptr: /metrics only (derived)
  const char* metric;       // the Prometheus family; nullptr: "seam_engine_" + key
  const char* label_name;   // nullptr: no label
  const char* label_value;
  StatKind kind;
  bool integer;             // written as an integer in JSON
  const char* help;         // nullptr: "engine stat " + key
  double (*get)(const EngineStats&);

  std::string metric_name() const;
  std::string help_text() const;
};

// One labelled map stat (one sample per key of the map).
struct StatMapField {
  const char* key;
  const char* metric;
  const char* label_name;
  StatKind kind;
  const char* help;
  const std::map<std::string, uint64_t>& (*get)(const EngineStats&);
};

const std::vector<StatField>& engine_stat_fields();
const std::vector<StatMapField>& engine_stat_map_fields();

}  // namespace seam
