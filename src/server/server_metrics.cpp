#include "server/server_metrics.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

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

std::string ServerMetrics::render(const EngineStats* s, int64_t n_in_flight) const {
  std::string out;
  const bool ready = s != nullptr;
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

  // The engine's stats, from the one field table; a family's header comes with its first field.
  std::string family;
  for (const StatField& f : engine_stat_fields()) {
    const std::string name = f.metric_name();
    if (name != family) header(out, name, f.kind == StatKind::counter ? "counter" : "gauge", f.help_text());
    family = name;
    sample(out, name, f.get(*s), f.label_name ? label(f.label_name, f.label_value) : "");
  }
  for (const StatMapField& f : engine_stat_map_fields()) {
    header(out, f.metric, f.kind == StatKind::counter ? "counter" : "gauge", f.help);
    for (const auto& [key, value] : f.get(*s)) sample(out, f.metric, double(value), label(f.label_name, key));
  }
  return out;
}

}  // namespace seam
