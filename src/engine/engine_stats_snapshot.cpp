// EngineCore's stats snapshot (engine_core.h): publish_stats gathers the loop thread's
// counters, the scheduler's, the runner's graph stats and the structured-output compiler's
// into one EngineStats (api/engine_stats.h, whose field table names every stat once) and
// hands it to stats() under the lock. Each source fills its own fields in one helper below.
#include <algorithm>
#include <string>
#include <vector>

#include "engine/engine_core.h"
#include "engine/structured_output.h"
#include "graph/graph_stats.h"
#include "kv/radix_cache.h"
#include "kv/slot_allocator.h"
#include "runtime/model_runner.h"
#include "scheduler/scheduler.h"

namespace seam {

namespace {

// Steps by mode, retractions, the prefix cache, requests and the KV pool.
void put_scheduler(EngineStats& e, const Scheduler& scheduler, const SlotAllocator& slots, const RadixCache& cache) {
  const SchedulerStats& s = scheduler.stats();
  e.steps_extend = s.steps_extend;
  e.steps_decode = s.steps_decode;
  e.steps_mixed = s.steps_mixed;
  e.retractions = s.retractions;
  e.prefix_cache_hit_tokens = s.prefix_cache_hit_tokens;
  e.prefill_tokens = s.prefill_tokens;
  e.peak_running_requests = uint64_t(s.peak_running);
  e.budget_violations = s.budget_violations;
  e.running_requests = scheduler.n_running();
  e.waiting_requests = scheduler.n_waiting();
  e.kv_pool_tokens = uint64_t(slots.capacity());
  e.kv_free_tokens = uint64_t(slots.n_free());
  e.kv_cached_tokens = uint64_t(cache.n_cached_tokens());
}

// How steps ran (graph paths, eager reasons, verify steps by path) and what was captured.
void put_graphs(EngineStats& e, const GraphStats& g) {
  e.decode_graph_replays = g.decode_graph_replays;
  e.piecewise_replays = g.piecewise_replays;
  e.piecewise_replays_extend = g.piecewise_replays_extend;
  e.piecewise_replays_mixed = g.piecewise_replays_mixed;
  e.eager_steps = g.eager_steps;
  e.eager_by_reason.insert(g.eager_by_reason.begin(), g.eager_by_reason.end());
  e.padding_tokens = g.padding_tokens;
  e.verify_steps_decode_graph = g.verify_steps_decode_graph;
  e.verify_steps_piecewise = g.verify_steps_piecewise;
  e.verify_steps_eager = g.verify_steps_eager;
  e.captured_decode_keys = uint64_t(g.captured_decode_keys);
  e.captured_piecewise_keys = uint64_t(g.captured_piecewise_keys);
  e.captures_after_seal = g.captures_after_seal;
  e.decode_capture_s = g.decode_capture_s;
  e.piecewise_capture_s = g.piecewise_capture_s;
  e.decode_graph_bytes = uint64_t(g.decode_graph_bytes);
  e.piecewise_graph_bytes = uint64_t(g.piecewise_graph_bytes);
}

// The compiler's cache (compiles run on the submitting threads).
void put_grammar_cache(EngineStats& e, const StructuredOutput& structured) {
  const grammar::GrammarCompilerStats gs = structured.cache_stats();
  e.grammar_compile_ms_total = structured.compile_ms_total();
  e.grammar_cache_hits = gs.n_hits;
  e.grammar_cache_misses = gs.n_misses;
  e.grammar_cache_bytes = gs.n_bytes;
}

// Tensor parallelism: the group's size and every rank's memory after start-up, by rank.
void put_tp_memory(EngineStats& e, int tp_size, const std::vector<RankParts::Memory>& group_memory) {
  e.tp_size = uint64_t(tp_size);
  for (size_t r = 0; r < group_memory.size(); ++r) {
    e.tp_rank_weight_bytes[std::to_string(r)] = group_memory[r].weight_bytes;
    e.tp_rank_kv_bytes[std::to_string(r)] = group_memory[r].kv_bytes;
    e.tp_rank_graph_bytes[std::to_string(r)] = group_memory[r].graph_bytes;
  }
}

}  // namespace

void EngineCore::publish_stats() {
  EngineStats e;
  put_scheduler(e, *scheduler_, *slots_, *cache_);
  put_graphs(e, runner_->graph_stats());
  put_grammar_cache(e, *structured_);
  put_tp_memory(e, config_.tp_size, group_memory_);
  // The loop thread's own counters.
  e.steps = n_steps_;
  e.stalled_schedules = n_stalled_schedules_;
  e.finished_requests = n_finished_;
  e.prompt_tokens = n_prompt_tokens_;
  e.generated_tokens = n_generated_tokens_;
  e.speculative_proposed_tokens = spec_proposed_;
  e.speculative_accepted_tokens = spec_accepted_;
  e.speculative_verify_rows = spec_verify_rows_;
  e.speculative_off_steps = spec_off_steps_;
  e.speculative_backoff_steps = spec_backoff_steps_;
  e.speculative_accept_length = spec_accept_length_;
  e.grammar_requests = n_constrained_requests_;
  e.grammar_mask_steps = grammar_mask_steps_;
  e.grammar_mask_hidden_steps = grammar_mask_hidden_steps_;
  e.grammar_masked_rows_total = grammar_masked_rows_;
  e.grammar_mask_ms_total = 1e3 * grammar_mask_s_;
  e.grammar_mask_exposed_ms_total = 1e3 * grammar_mask_exposed_s_;
  // Means over steps that ran a batch; the phases add up to step_wall_ms_per_step.
  const double steps = double(std::max<uint64_t>(n_steps_, 1));
  e.host_schedule_ms_per_step = 1e3 * host_schedule_s_ / steps;
  e.host_prepare_ms_per_step = 1e3 * host_prepare_s_ / steps;
  e.host_launch_ms_per_step = 1e3 * host_launch_s_ / steps;
  e.host_wait_ms_per_step = 1e3 * host_wait_s_ / steps;
  e.host_process_ms_per_step = 1e3 * host_process_s_ / steps;
  e.host_detokenize_ms_per_step = 1e3 * host_detokenize_s_ / steps;
  e.host_handoff_ms_per_step = 1e3 * host_handoff_s_ / steps;
  e.forward_ms_per_step = 1e3 * (host_prepare_s_ + host_launch_s_ + host_wait_s_) / steps;
  e.step_wall_ms_per_step = 1e3 * step_wall_s_ / steps;
  e.gpu_ms_per_step = 1e3 * gpu_s_ / steps;
  e.gpu_busy_fraction = step_wall_s_ > 0 ? gpu_s_ / step_wall_s_ : 0.0;
  std::lock_guard<std::mutex> lock(mu_);
  stats_snapshot_ = std::move(e);
  // Idle only once the snapshot reflects every finished request.
  stats_idle_ = n_in_flight_ == 0 && incoming_.empty();
  if (stats_idle_) idle_cv_.notify_all();
}

EngineStats EngineCore::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_snapshot_;
}

}  // namespace seam
