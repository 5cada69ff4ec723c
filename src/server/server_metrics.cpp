#include "server/server_metrics.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

namespace seam {

namespace {

// The shortest text that reads back as the same double ("0.1", not "0.10000000000000001").
std::string number(double x) {
  char buf[64];
  // Whole numbers as integers ("30", not "3e+01"): counters and token counts.
  if (x > -9.0e15 && x < 9.0e15 && x == std::floor(x)) {
    std::snprintf(buf, sizeof buf, "%lld", (long long)x);
    return buf;
  }
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  return buf;
}

void header(std::string& out, const std::string& name, const char* type, const std::string& help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void sample(std::string& out, const std::string& name, double value, const std::string& labels = "") {
  out += name + (labels.empty() ? "" : "{" + labels + "}") + " " + number(value) + "\n";
}

// A label value with Prometheus escaping.
std::string label(const std::string& key, const std::string& value) {
  std::string v;
  for (char c : value) {
    if (c == '\\' || c == '"') v += '\\';
    if (c == '\n') {
      v += "\\n";
      continue;
    }
    v += c;
  }
  return key + "=\"" + v + "\"";
}

double num(const nlohmann::json& s, const char* key) {
  auto it = s.find(key);
  return it != s.end() && it->is_number() ? it->get<double>() : 0.0;
}

// Latency buckets (seconds) spanning a CPU toy model to long GPU prompts.
std::vector<double> latency_buckets() {
  return {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3,
          0.5,    0.75,  1.0,   2.0,   5.0,  10.0, 20.0, 40.0, 80.0,  160.0, 320.0};
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double x, uint64_t n) {
  size_t i = 0;
  while (i < bounds_.size() && x > bounds_[i]) ++i;
  counts_[i] += n;
  sum_ += x * double(n);
  count_ += n;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& help) const {
  header(out, name, "histogram", help);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    sample(out, name + "_bucket", double(cumulative), label("le", number(bounds_[i])));
  }
  sample(out, name + "_bucket", double(count_), label("le", "+Inf"));
  sample(out, name + "_sum", sum_);
  sample(out, name + "_count", double(count_));
}

ServerMetrics::ServerMetrics() : ttft_(latency_buckets()), itl_(latency_buckets()), e2e_(latency_buckets()) {}

void ServerMetrics::observe_ttft(double s) {
  std::lock_guard<std::mutex> lock(mu_);
  ttft_.observe(s);
}

void ServerMetrics::observe_itl(double s, uint64_t n_tokens) {
  if (n_tokens == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  itl_.observe(s / double(n_tokens), n_tokens);
}

void ServerMetrics::count_finished(FinishReason reason, bool error, double e2e_seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  ++finished_[error ? "error" : finish_reason_name(reason)];
  e2e_.observe(e2e_seconds);
}

void ServerMetrics::count_rejected(int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++rejected_[status];
}

std::string ServerMetrics::render(const nlohmann::json& s, int64_t n_in_flight) const {
  std::string out;
  const bool ready = s.is_object();
  header(out, "seam_ready", "gauge", "1 once the engine is constructed and its graphs captured");
  sample(out, "seam_ready", ready ? 1 : 0);
  header(out, "seam_server_in_flight_requests", "gauge", "engine requests submitted by the server and not finished");
  sample(out, "seam_server_in_flight_requests", double(n_in_flight));
  {
    std::lock_guard<std::mutex> lock(mu_);
    header(out, "seam_requests_total", "counter", "finished requests (choices) by finish reason");
    for (const char* r : {"stop", "length", "abort", "error"}) {
      auto it = finished_.find(r);
      sample(out, "seam_requests_total", double(it == finished_.end() ? 0 : it->second), label("finish_reason", r));
    }
    header(out, "seam_rejected_requests_total", "counter", "requests refused before reaching the engine, by status");
    for (const auto& [status, n] : rejected_) sample(out, "seam_rejected_requests_total", double(n),
                                                      label("status", std::to_string(status)));
    ttft_.render(out, "seam_time_to_first_token_seconds", "time from request arrival to its first output token");
    itl_.render(out, "seam_inter_token_latency_seconds", "time between consecutive output tokens of a request");
    e2e_.render(out, "seam_e2e_request_latency_seconds", "time from request arrival to its last output token");
  }
  if (!ready) return out;

  std::set<std::string> done;
  auto counter = [&](const char* key, const std::string& name, const std::string& help) {
    header(out, name, "counter", help);
    sample(out, name, num(s, key));
    done.insert(key);
  };
  auto gauge = [&](const char* key, const std::string& name, const std::string& help) {
    header(out, name, "gauge", help);
    sample(out, name, num(s, key));
    done.insert(key);
  };
  counter("prompt_tokens", "seam_prompt_tokens_total", "prompt tokens of finished requests");
  counter("generated_tokens", "seam_generation_tokens_total", "generated tokens");
  counter("finished_requests", "seam_engine_finished_requests_total", "requests the engine finished");
  counter("prefill_tokens", "seam_prefill_tokens_total", "tokens computed in prefill rows");
  counter("prefix_cache_hit_tokens", "seam_prefix_cache_hit_tokens_total", "prompt tokens served by the prefix cache");
  counter("retractions", "seam_retractions_total", "requests retracted to the waiting queue when KV ran out");
  counter("steps", "seam_steps_total", "engine steps");
  gauge("running_requests", "seam_num_running_reqs", "running requests");
  gauge("waiting_requests", "seam_num_waiting_reqs", "waiting requests");
  gauge("peak_running_requests", "seam_peak_running_reqs", "most requests running at once");
  gauge("kv_pool_tokens", "seam_kv_pool_tokens", "KV pool size in tokens");
  gauge("kv_free_tokens", "seam_kv_free_tokens", "free KV slots");
  gauge("kv_cached_tokens", "seam_kv_cached_tokens", "KV slots held by the prefix cache (evictable)");
  const double pool = num(s, "kv_pool_tokens");
  header(out, "seam_kv_usage_ratio", "gauge", "fraction of KV slots in use (prefix cache included)");
  sample(out, "seam_kv_usage_ratio", pool > 0 ? 1.0 - num(s, "kv_free_tokens") / pool : 0.0);

  header(out, "seam_steps_by_mode_total", "counter", "engine steps by batch mode");
  for (const char* m : {"extend", "decode", "mixed"}) {
    sample(out, "seam_steps_by_mode_total", num(s, m), label("mode", m));
    done.insert(m);
  }
  header(out, "seam_steps_by_path_total", "counter", "forward steps by graph path");
  sample(out, "seam_steps_by_path_total", num(s, "decode_graph_replays"), label("path", "decode_graph"));
  sample(out, "seam_steps_by_path_total", num(s, "piecewise_replays"), label("path", "piecewise"));
  sample(out, "seam_steps_by_path_total", num(s, "eager_steps"), label("path", "eager"));
  done.insert({"decode_graph_replays", "piecewise_replays", "eager_steps"});
  header(out, "seam_eager_steps_by_reason_total", "counter", "eager steps by why no graph was used");
  if (auto it = s.find("eager_by_reason"); it != s.end() && it->is_object())
    for (auto r = it->begin(); r != it->end(); ++r)
      if (r->is_number()) sample(out, "seam_eager_steps_by_reason_total", r->get<double>(), label("reason", r.key()));
  done.insert("eager_by_reason");
  counter("captures_after_seal", "seam_captures_after_seal_total", "graph captures after start-up (must stay 0)");
  counter("budget_violations", "seam_budget_violations_total", "batches over the token budget (must stay 0)");
  counter("padding_tokens", "seam_padding_tokens_total", "padded tokens of graph replays");
  // The phases are consecutive and disjoint: they add up to seam_step_wall_ms_per_step.
  header(out, "seam_host_ms_per_step", "gauge",
         "mean host milliseconds per step, by phase (wait: blocked until the sampled ids are back)");
  for (const char* phase : {"schedule", "prepare", "launch", "wait", "process", "detokenize", "handoff"}) {
    const std::string key = std::string("host_") + phase + "_ms_per_step";
    sample(out, "seam_host_ms_per_step", num(s, key.c_str()), label("phase", phase));
    done.insert(key);
  }
  gauge("step_wall_ms_per_step", "seam_step_wall_ms_per_step", "mean wall milliseconds per engine step");
  gauge("gpu_ms_per_step", "seam_gpu_ms_per_step",
        "mean device milliseconds per step, first input copy to the sampled ids' copy (gaps included)");
  gauge("gpu_busy_fraction", "seam_gpu_busy_fraction", "device time of the steps / their wall time");
  // Anything else the engine reports, as a gauge under its own name.
  for (auto it = s.begin(); it != s.end(); ++it) {
    if (done.count(it.key()) || !it->is_number()) continue;
    const std::string name = "seam_engine_" + it.key();
    header(out, name, "gauge", "engine stat " + it.key());
    sample(out, name, it->get<double>());
  }
  return out;
}

}  // namespace seam
