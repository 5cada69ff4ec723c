#include "api/engine_stats.h"

#include <cmath>

namespace seam {

namespace {
using S = const EngineStats&;
constexpr StatKind counter = StatKind::counter, gauge = StatKind::gauge;
constexpr bool integer = true, real = false;
const char* const k_host_help = "mean host milliseconds per step, by phase (wait: blocked until the sampled ids are back)";
}  // namespace

// The table. Names and help texts are the ones /metrics and --stats had before
// the table existed (dashboards and tests read them).
const std::vector<StatField>& engine_stat_fields() {
  static const std::vector<StatField> fields = {
      {"prompt_tokens", "seam_prompt_tokens_total", nullptr, nullptr, counter, integer,
       "prompt tokens of finished requests", [](S s) { return double(s.prompt_tokens); }},
      {"generated_tokens", "seam_generation_tokens_total", nullptr, nullptr, counter, integer, "generated tokens",
       [](S s) { return double(s.generated_tokens); }},
      {"finished_requests", "seam_engine_finished_requests_total", nullptr, nullptr, counter, integer,
       "requests the engine finished", [](S s) { return double(s.finished_requests); }},
      {"prefill_tokens", "seam_prefill_tokens_total", nullptr, nullptr, counter, integer,
       "tokens computed in prefill rows", [](S s) { return double(s.prefill_tokens); }},
      {"prefix_cache_hit_tokens", "seam_prefix_cache_hit_tokens_total", nullptr, nullptr, counter, integer,
       "prompt tokens served by the prefix cache", [](S s) { return double(s.prefix_cache_hit_tokens); }},
      {"retractions", "seam_retractions_total", nullptr, nullptr, counter, integer,
       "requests retracted to the waiting queue when KV ran out", [](S s) { return double(s.retractions); }},
      {"steps", "seam_steps_total", nullptr, nullptr, counter, integer, "engine steps",
       [](S s) { return double(s.steps); }},
      {"running_requests", "seam_num_running_reqs", nullptr, nullptr, gauge, integer, "running requests",
       [](S s) { return double(s.running_requests); }},
      {"waiting_requests", "seam_num_waiting_reqs", nullptr, nullptr, gauge, integer, "waiting requests",
       [](S s) { return double(s.waiting_requests); }},
      {"peak_running_requests", "seam_peak_running_reqs", nullptr, nullptr, gauge, integer,
       "most requests running at once", [](S s) { return double(s.peak_running_requests); }},
      {"kv_pool_tokens", "seam_kv_pool_tokens", nullptr, nullptr, gauge, integer, "KV pool size in tokens",
       [](S s) { return double(s.kv_pool_tokens); }},
      {"kv_free_tokens", "seam_kv_free_tokens", nullptr, nullptr, gauge, integer, "free KV slots",
       [](S s) { return double(s.kv_free_tokens); }},
      {"kv_cached_tokens", "seam_kv_cached_tokens", nullptr, nullptr, gauge, integer,
       "KV slots held by the prefix cache (evictable)", [](S s) { return double(s.kv_cached_tokens); }},
      {nullptr, "seam_kv_usage_ratio", nullptr, nullptr, gauge, real,
       "fraction of KV slots in use (prefix cache included)",
       [](S s) { return s.kv_pool_tokens > 0 ? 1.0 - double(s.kv_free_tokens) / double(s.kv_pool_tokens) : 0.0; }},
      {"extend", "seam_steps_by_mode_total", "mode", "extend", counter, integer, "engine steps by batch mode",
       [](S s) { return double(s.steps_extend); }},
      {"decode", "seam_steps_by_mode_total", "mode", "decode", counter, integer, "engine steps by batch mode",
       [](S s) { return double(s.steps_decode); }},
      {"mixed", "seam_steps_by_mode_total", "mode", "mixed", counter, integer, "engine steps by batch mode",
       [](S s) { return double(s.steps_mixed); }},
      {"decode_graph_replays", "seam_steps_by_path_total", "path", "decode_graph", counter, integer,
       "forward steps by graph path", [](S s) { return double(s.decode_graph_replays); }},
      {"piecewise_replays", "seam_steps_by_path_total", "path", "piecewise", counter, integer,
       "forward steps by graph path", [](S s) { return double(s.piecewise_replays); }},
      {"eager_steps", "seam_steps_by_path_total", "path", "eager", counter, integer, "forward steps by graph path",
       [](S s) { return double(s.eager_steps); }},
      {"speculative_proposed_tokens", "seam_speculative_proposed_tokens_total", nullptr, nullptr, counter, integer,
       "draft tokens proposed to verify rows", [](S s) { return double(s.speculative_proposed_tokens); }},
      {"speculative_accepted_tokens", "seam_speculative_accepted_tokens_total", nullptr, nullptr, counter, integer,
       "draft tokens the target accepted", [](S s) { return double(s.speculative_accepted_tokens); }},
      {"speculative_verify_rows", "seam_speculative_verify_rows_total", nullptr, nullptr, counter, integer,
       "verify rows (a decoding request with drafts) computed", [](S s) { return double(s.speculative_verify_rows); }},
      {"speculative_off_steps", "seam_speculative_off_steps_total", nullptr, nullptr, counter, integer,
       "steps that drafted nothing because more requests decoded than --speculative-max-batch-size",
       [](S s) { return double(s.speculative_off_steps); }},
      {"speculative_backoff_steps", "seam_speculative_backoff_steps_total", nullptr, nullptr, counter, integer,
       "decode rows (one per request and step) that drafted nothing because the request backs off after a verify "
       "row that accepted nothing",
       [](S s) { return double(s.speculative_backoff_steps); }},
      {"verify_steps_decode_graph", "seam_speculative_verify_steps_total", "path", "decode_graph", counter, integer,
       "forward steps with verify rows by graph path", [](S s) { return double(s.verify_steps_decode_graph); }},
      {"verify_steps_piecewise", "seam_speculative_verify_steps_total", "path", "piecewise", counter, integer,
       "forward steps with verify rows by graph path", [](S s) { return double(s.verify_steps_piecewise); }},
      {"verify_steps_eager", "seam_speculative_verify_steps_total", "path", "eager", counter, integer,
       "forward steps with verify rows by graph path", [](S s) { return double(s.verify_steps_eager); }},
      {"captures_after_seal", "seam_captures_after_seal_total", nullptr, nullptr, counter, integer,
       "graph captures after start-up (must stay 0)", [](S s) { return double(s.captures_after_seal); }},
      {"budget_violations", "seam_budget_violations_total", nullptr, nullptr, counter, integer,
       "batches over the token budget (must stay 0)", [](S s) { return double(s.budget_violations); }},
      {"stalled_schedules", "seam_stalled_schedules_total", nullptr, nullptr, counter, integer,
       "schedules that found nothing to run while requests waited (the loop then waits for a submit or an abort)",
       [](S s) { return double(s.stalled_schedules); }},
      {"padding_tokens", "seam_padding_tokens_total", nullptr, nullptr, counter, integer,
       "padded tokens of graph replays", [](S s) { return double(s.padding_tokens); }},
      // The phases are consecutive and disjoint: they add up to seam_step_wall_ms_per_step.
      {"host_schedule_ms_per_step", "seam_host_ms_per_step", "phase", "schedule", gauge, real, k_host_help,
       [](S s) { return s.host_schedule_ms_per_step; }},
      {"host_prepare_ms_per_step", "seam_host_ms_per_step", "phase", "prepare", gauge, real, k_host_help,
       [](S s) { return s.host_prepare_ms_per_step; }},
      {"host_launch_ms_per_step", "seam_host_ms_per_step", "phase", "launch", gauge, real, k_host_help,
       [](S s) { return s.host_launch_ms_per_step; }},
      {"host_wait_ms_per_step", "seam_host_ms_per_step", "phase", "wait", gauge, real, k_host_help,
       [](S s) { return s.host_wait_ms_per_step; }},
      {"host_process_ms_per_step", "seam_host_ms_per_step", "phase", "process", gauge, real, k_host_help,
       [](S s) { return s.host_process_ms_per_step; }},
      {"host_detokenize_ms_per_step", "seam_host_ms_per_step", "phase", "detokenize", gauge, real, k_host_help,
       [](S s) { return s.host_detokenize_ms_per_step; }},
      {"host_handoff_ms_per_step", "seam_host_ms_per_step", "phase", "handoff", gauge, real, k_host_help,
       [](S s) { return s.host_handoff_ms_per_step; }},
      {"step_wall_ms_per_step", "seam_step_wall_ms_per_step", nullptr, nullptr, gauge, real,
       "mean wall milliseconds per engine step", [](S s) { return s.step_wall_ms_per_step; }},
      {"gpu_ms_per_step", "seam_gpu_ms_per_step", nullptr, nullptr, gauge, real,
       "mean device milliseconds per step, first input copy to the sampled ids' copy (gaps included)",
       [](S s) { return s.gpu_ms_per_step; }},
      {"gpu_busy_fraction", "seam_gpu_busy_fraction", nullptr, nullptr, gauge, real,
       "device time of the steps / their wall time", [](S s) { return s.gpu_busy_fraction; }},
      {"tp_size", "seam_tp_size", nullptr, nullptr, gauge, integer, "tensor-parallel ranks the model is split over",
       [](S s) { return double(s.tp_size); }},
      // The rest: gauges under their own name (seam_engine_<key>).
      {"piecewise_replays_extend", nullptr, nullptr, nullptr, gauge, integer, nullptr,
       [](S s) { return double(s.piecewise_replays_extend); }},
      {"piecewise_replays_mixed", nullptr, nullptr, nullptr, gauge, integer, nullptr,
       [](S s) { return double(s.piecewise_replays_mixed); }},
      {"captured_decode_keys", nullptr, nullptr, nullptr, gauge, integer, nullptr,
       [](S s) { return double(s.captured_decode_keys); }},
      {"captured_piecewise_keys", nullptr, nullptr, nullptr, gauge, integer, nullptr,
       [](S s) { return double(s.captured_piecewise_keys); }},
      {"decode_capture_s", nullptr, nullptr, nullptr, gauge, real, nullptr, [](S s) { return s.decode_capture_s; }},
      {"piecewise_capture_s", nullptr, nullptr, nullptr, gauge, real, nullptr,
       [](S s) { return s.piecewise_capture_s; }},
      {"decode_graph_bytes", nullptr, nullptr, nullptr, gauge, integer, nullptr,
       [](S s) { return double(s.decode_graph_bytes); }},
      {"piecewise_graph_bytes", nullptr, nullptr, nullptr, gauge, integer, nullptr,
       [](S s) { return double(s.piecewise_graph_bytes); }},
      {"forward_ms_per_step", nullptr, nullptr, nullptr, gauge, real, nullptr,
       [](S s) { return s.forward_ms_per_step; }},
      // Structured output (architecture.md "Structured output").
      {"grammar_requests", "seam_grammar_requests_total", nullptr, nullptr, counter, integer,
       "requests with a structured-output constraint", [](S s) { return double(s.grammar_requests); }},
      {"grammar_compile_ms_total", "seam_grammar_compile_ms_total", nullptr, nullptr, counter, real,
       "milliseconds compiling constraints at submit (cache hits included)",
       [](S s) { return s.grammar_compile_ms_total; }},
      {"grammar_cache_hits", "seam_grammar_cache_total", "result", "hit", counter, integer,
       "constraint compiles by compiled-grammar cache result", [](S s) { return double(s.grammar_cache_hits); }},
      {"grammar_cache_misses", "seam_grammar_cache_total", "result", "miss", counter, integer,
       "constraint compiles by compiled-grammar cache result", [](S s) { return double(s.grammar_cache_misses); }},
      {"grammar_cache_bytes", "seam_grammar_cache_bytes", nullptr, nullptr, gauge, integer,
       "bytes of compiled grammars cached (--grammar-cache-mb)", [](S s) { return double(s.grammar_cache_bytes); }},
      {"grammar_mask_steps", "seam_grammar_mask_steps_total", nullptr, nullptr, counter, integer,
       "steps with structured-output rows", [](S s) { return double(s.grammar_mask_steps); }},
      {"grammar_mask_hidden_steps", "seam_grammar_mask_hidden_steps_total", nullptr, nullptr, counter, integer,
       "steps whose token masks were ready before the device finished the forward",
       [](S s) { return double(s.grammar_mask_hidden_steps); }},
      {"grammar_masked_rows_total", "seam_grammar_masked_rows_total", nullptr, nullptr, counter, integer,
       "token masks built (one per constrained row per step)", [](S s) { return double(s.grammar_masked_rows_total); }},
      {"grammar_mask_ms_total", "seam_grammar_mask_ms_total", nullptr, nullptr, counter, real,
       "host milliseconds building token masks", [](S s) { return s.grammar_mask_ms_total; }},
      {"grammar_mask_exposed_ms_total", "seam_grammar_mask_exposed_ms_total", nullptr, nullptr, counter, real,
       "host milliseconds building token masks after the device had finished the forward (not hidden)",
       [](S s) { return s.grammar_mask_exposed_ms_total; }},
  };
  return fields;
}

const std::vector<StatMapField>& engine_stat_map_fields() {
  static const std::vector<StatMapField> fields = {
      {"eager_by_reason", "seam_eager_steps_by_reason_total", "reason", counter,
       "eager steps by why no graph was used", [](S s) -> const std::map<std::string, uint64_t>& {
         return s.eager_by_reason;
       }},
      {"speculative_accept_length", "seam_speculative_accept_length_total", "accepted", counter,
       "verify rows by how many of their drafts were accepted", [](S s) -> const std::map<std::string, uint64_t>& {
         return s.speculative_accept_length;
       }},
      {"tp_rank_weight_bytes", "seam_tp_rank_weight_bytes", "rank", gauge,
       "model weight bytes each tensor-parallel rank holds",
       [](S s) -> const std::map<std::string, uint64_t>& { return s.tp_rank_weight_bytes; }},
      {"tp_rank_kv_bytes", "seam_tp_rank_kv_bytes", "rank", gauge, "KV pool bytes of each tensor-parallel rank",
       [](S s) -> const std::map<std::string, uint64_t>& { return s.tp_rank_kv_bytes; }},
      {"tp_rank_graph_bytes", "seam_tp_rank_graph_bytes", "rank", gauge,
       "graph memory (decode + piecewise) of each tensor-parallel rank",
       [](S s) -> const std::map<std::string, uint64_t>& { return s.tp_rank_graph_bytes; }},
  };
  return fields;
}

std::string StatField::metric_name() const { return metric ? metric : std::string("seam_engine_") + key; }
std::string StatField::help_text() const { return help ? help : std::string("engine stat ") + key; }

nlohmann::json EngineStats::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const StatField& f : engine_stat_fields()) {
    if (!f.key) continue;
    const double v = f.get(*this);
    if (f.integer) {
      j[f.key] = uint64_t(std::llround(v));
    } else {
      j[f.key] = v;
    }
  }
  for (const StatMapField& f : engine_stat_map_fields()) j[f.key] = f.get(*this);
  return j;
}

}  // namespace seam
