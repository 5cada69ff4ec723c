// EngineStats' one field table: the `--stats` JSON and the /metrics page are
// both generated from it. The JSON keys dashboards and tests read stay the
// ones seam always reported; each key and each (family, label) appears once;
// every field reaches both outputs with the same value.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "api/engine_stats.h"
#include "server/server_metrics.h"

namespace seam {
namespace {

// The keys `generate --stats` reported before the table existed.
const std::set<std::string> k_reported_keys = {
    "steps", "extend", "decode", "mixed", "retractions", "prefix_cache_hit_tokens", "prefill_tokens",
    "peak_running_requests", "running_requests", "waiting_requests", "kv_pool_tokens", "kv_free_tokens",
    "kv_cached_tokens", "budget_violations", "finished_requests", "prompt_tokens", "generated_tokens",
    "decode_graph_replays", "piecewise_replays", "piecewise_replays_extend", "piecewise_replays_mixed",
    "eager_steps", "eager_by_reason", "padding_tokens", "captured_decode_keys", "captured_piecewise_keys",
    "captures_after_seal", "decode_capture_s", "piecewise_capture_s", "decode_graph_bytes",
    "piecewise_graph_bytes", "host_schedule_ms_per_step", "host_prepare_ms_per_step", "host_launch_ms_per_step",
    "host_wait_ms_per_step", "host_process_ms_per_step", "host_detokenize_ms_per_step",
    "host_handoff_ms_per_step", "forward_ms_per_step", "step_wall_ms_per_step", "gpu_ms_per_step",
    "gpu_busy_fraction",
    // structured output (issue 21)
    "grammar_requests", "grammar_compile_ms_total", "grammar_cache_hits", "grammar_cache_misses",
    "grammar_cache_bytes", "grammar_mask_steps", "grammar_mask_hidden_steps", "grammar_masked_rows_total",
    "grammar_mask_ms_total", "grammar_mask_exposed_ms_total",
    // speculative decoding (issue 27)
    "speculative_proposed_tokens", "speculative_accepted_tokens", "speculative_verify_rows",
    "speculative_off_steps", "speculative_backoff_steps", "speculative_accept_length", "verify_steps_decode_graph", "verify_steps_piecewise",
    "verify_steps_eager",
    // tensor parallelism (issue 25)
    "tp_size", "tp_rank_weight_bytes", "tp_rank_kv_bytes", "tp_rank_graph_bytes",
    // the engine loop
    "stalled_schedules"};

// Distinct values per field, so a field wired to the wrong member shows.
EngineStats distinct_stats() {
  EngineStats s;
  s.steps = 101, s.steps_extend = 102, s.steps_decode = 103, s.steps_mixed = 104;
  s.retractions = 105, s.prefix_cache_hit_tokens = 106, s.prefill_tokens = 107, s.budget_violations = 108;
  s.peak_running_requests = 109, s.running_requests = 110, s.waiting_requests = 111;
  s.kv_pool_tokens = 1000, s.kv_free_tokens = 250, s.kv_cached_tokens = 112;
  s.finished_requests = 113, s.prompt_tokens = 114, s.generated_tokens = 115;
  s.decode_graph_replays = 116, s.piecewise_replays = 117, s.piecewise_replays_extend = 118;
  s.piecewise_replays_mixed = 119, s.eager_steps = 120;
  s.eager_by_reason = {{"disabled", 3}, {"too many tokens", 4}};
  s.padding_tokens = 121, s.captured_decode_keys = 122, s.captured_piecewise_keys = 123, s.captures_after_seal = 124;
  s.decode_capture_s = 1.25, s.piecewise_capture_s = 2.5, s.decode_graph_bytes = 125, s.piecewise_graph_bytes = 126;
  s.host_schedule_ms_per_step = 0.5, s.host_prepare_ms_per_step = 0.75, s.host_launch_ms_per_step = 1.5;
  s.host_wait_ms_per_step = 2.25, s.host_process_ms_per_step = 3.5, s.host_detokenize_ms_per_step = 4.75;
  s.host_handoff_ms_per_step = 5.5, s.forward_ms_per_step = 6.25, s.step_wall_ms_per_step = 7.5;
  s.gpu_ms_per_step = 8.75, s.gpu_busy_fraction = 0.625;
  s.grammar_requests = 127, s.grammar_compile_ms_total = 9.25, s.grammar_cache_hits = 128;
  s.grammar_cache_misses = 129, s.grammar_cache_bytes = 130, s.grammar_mask_steps = 131;
  s.grammar_mask_hidden_steps = 132, s.grammar_masked_rows_total = 133, s.grammar_mask_ms_total = 10.5;
  s.grammar_mask_exposed_ms_total = 11.75;
  s.speculative_proposed_tokens = 134, s.speculative_accepted_tokens = 135, s.speculative_verify_rows = 136;
  s.speculative_off_steps = 137, s.speculative_accept_length = {{"0", 5}, {"3", 6}};
  s.verify_steps_decode_graph = 138, s.verify_steps_piecewise = 139, s.verify_steps_eager = 140;
  s.tp_size = 141, s.tp_rank_weight_bytes = {{"0", 7}, {"1", 8}}, s.tp_rank_kv_bytes = {{"0", 9}};
  s.tp_rank_graph_bytes = {{"1", 10}};
  s.stalled_schedules = 142, s.speculative_backoff_steps = 143;
  return s;
}

TEST(EngineStats, JsonKeysAreTheReportedOnesEachOnce) {
  std::set<std::string> keys, samples;
  for (const StatField& f : engine_stat_fields()) {
    if (f.key) EXPECT_TRUE(keys.insert(f.key).second) << "key twice: " << f.key;
    const std::string sample = f.metric_name() + (f.label_name ? std::string(f.label_name) + f.label_value : "");
    EXPECT_TRUE(samples.insert(sample).second) << "sample twice: " << sample;
  }
  for (const StatMapField& f : engine_stat_map_fields()) EXPECT_TRUE(keys.insert(f.key).second) << f.key;
  EXPECT_EQ(keys, k_reported_keys);
  const nlohmann::json j = distinct_stats().to_json();
  std::set<std::string> json_keys;
  for (auto it = j.begin(); it != j.end(); ++it) json_keys.insert(it.key());
  EXPECT_EQ(json_keys, k_reported_keys);
  EXPECT_EQ(j["steps"], 101);
  EXPECT_TRUE(j["steps"].is_number_integer());
  EXPECT_EQ(j["decode"], 103);
  EXPECT_EQ(j["gpu_busy_fraction"], 0.625);
  EXPECT_EQ(j["eager_by_reason"]["too many tokens"], 4);
}

TEST(EngineStats, MetricsCarryEveryFieldWithItsValue) {
  const EngineStats s = distinct_stats();
  const std::string text = "\n" + ServerMetrics().render(&s, 0);
  for (const StatField& f : engine_stat_fields()) {
    std::string line = "\n" + f.metric_name();
    if (f.label_name) line += std::string("{") + f.label_name + "=\"" + f.label_value + "\"}";
    const size_t at = text.find(line + " ");
    ASSERT_NE(at, std::string::npos) << line;
    const double value = std::stod(text.substr(at + line.size() + 1));
    EXPECT_DOUBLE_EQ(value, f.get(s)) << line;
    // One HELP/TYPE per family.
    const std::string help = "# HELP " + f.metric_name() + " ";
    EXPECT_EQ(text.find(help), text.rfind(help)) << help;
  }
  EXPECT_NE(text.find("\nseam_kv_usage_ratio 0.75\n"), std::string::npos);
  EXPECT_NE(text.find("\nseam_steps_by_mode_total{mode=\"mixed\"} 104\n"), std::string::npos);
  EXPECT_NE(text.find("\nseam_eager_steps_by_reason_total{reason=\"too many tokens\"} 4\n"), std::string::npos);
  EXPECT_NE(text.find("\nseam_engine_piecewise_replays_extend 118\n"), std::string::npos);
  EXPECT_NE(text.find("\nseam_grammar_cache_total{result=\"miss\"} 129\n"), std::string::npos);
  EXPECT_NE(text.find("\nseam_speculative_verify_steps_total{path=\"piecewise\"} 139\n"), std::string::npos);
  EXPECT_NE(text.find("\nseam_speculative_accept_length_total{accepted=\"3\"} 6\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE seam_prompt_tokens_total counter"), std::string::npos);
  EXPECT_NE(text.find("# TYPE seam_num_running_reqs gauge"), std::string::npos);
}

}  // namespace
}  // namespace seam
