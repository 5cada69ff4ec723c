#include "bench_serving/bench_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace seam {

Percentiles percentiles(std::vector<double> xs) {
  Percentiles p;
  if (xs.empty()) return p;
  std::sort(xs.begin(), xs.end());
  auto at = [&](double q) {
    const double idx = q / 100.0 * double(xs.size() - 1);
    const size_t lo = size_t(std::floor(idx)), hi = size_t(std::ceil(idx));
    return xs[lo] + (xs[hi] - xs[lo]) * (idx - double(lo));
  };
  p.mean = std::accumulate(xs.begin(), xs.end(), 0.0) / double(xs.size());
  p.median = at(50);
  p.p90 = at(90);
  p.p99 = at(99);
  p.max = xs.back();
  return p;
}

BenchSummary summarize(const std::vector<RequestRecord>& records, double duration_s) {
  BenchSummary s;
  s.duration_s = duration_s;
  std::vector<double> e2e, ttft, tpot, itl;
  double latency_sum = 0;
  for (const RequestRecord& r : records) {
    if (!r.success) {
      ++s.failed;
      if (s.first_error.empty()) s.first_error = r.error;
      continue;
    }
    ++s.completed;
    s.total_input += r.prompt_len;
    s.total_output += r.output_len;
    e2e.push_back(r.latency_s * 1e3);
    ttft.push_back(r.ttft_s * 1e3);
    if (r.output_len > 1) tpot.push_back((r.latency_s - r.ttft_s) / double(r.output_len - 1) * 1e3);
    for (double x : r.itl_s) itl.push_back(x * 1e3);
    latency_sum += r.latency_s;
  }
  if (duration_s > 0) {
    s.request_throughput = double(s.completed) / duration_s;
    s.input_throughput = double(s.total_input) / duration_s;
    s.output_throughput = double(s.total_output) / duration_s;
    s.total_throughput = double(s.total_input + s.total_output) / duration_s;
    s.concurrency = latency_sum / duration_s;
  }
  s.e2e_ms = percentiles(e2e);
  s.ttft_ms = percentiles(ttft);
  s.tpot_ms = percentiles(tpot);
  s.itl_ms = percentiles(itl);
  return s;
}

namespace {

std::string row(const std::string& name, const std::string& value) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%-40s %-10s\n", (name + ":").c_str(), value.c_str());
  return buf;
}
std::string fixed(double x, int digits = 2) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}
std::string rule(const std::string& title, char fill) {
  const int width = 50;
  const int pad = std::max(0, width - int(title.size()));
  return std::string(size_t(pad / 2), fill) + title + std::string(size_t(pad - pad / 2), fill) + "\n";
}
std::string info(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return "not set";
  return j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
}
void add_percentiles(std::string& out, const char* what, const Percentiles& p) {
  out += row(std::string("Mean ") + what + " (ms)", fixed(p.mean));
  out += row(std::string("Median ") + what + " (ms)", fixed(p.median));
  out += row(std::string("P90 ") + what + " (ms)", fixed(p.p90));
  out += row(std::string("P99 ") + what + " (ms)", fixed(p.p99));
}
void put_percentiles(nlohmann::json& j, const std::string& what, const Percentiles& p) {
  j["mean_" + what + "_ms"] = p.mean;
  j["median_" + what + "_ms"] = p.median;
  j["p90_" + what + "_ms"] = p.p90;
  j["p99_" + what + "_ms"] = p.p99;
  j["max_" + what + "_ms"] = p.max;
}

}  // namespace

std::string format_table(const BenchSummary& s, const nlohmann::json& run) {
  std::string out;
  out += rule(" Serving Benchmark Result ", '=');
  out += row("Backend", info(run, "backend"));
  out += row("Traffic request rate", info(run, "request_rate"));
  out += row("Max request concurrency", info(run, "max_concurrency"));
  out += row("Successful requests", std::to_string(s.completed));
  out += row("Failed requests", std::to_string(s.failed));
  out += row("Benchmark duration (s)", fixed(s.duration_s));
  out += row("Total input tokens", std::to_string(s.total_input));
  out += row("Total generated tokens", std::to_string(s.total_output));
  out += row("Request throughput (req/s)", fixed(s.request_throughput));
  out += row("Input token throughput (tok/s)", fixed(s.input_throughput));
  out += row("Output token throughput (tok/s)", fixed(s.output_throughput));
  out += row("Total token throughput (tok/s)", fixed(s.total_throughput));
  out += row("Concurrency", fixed(s.concurrency));
  out += rule("End-to-End Latency", '-');
  add_percentiles(out, "E2E Latency", s.e2e_ms);
  out += rule("Time to First Token", '-');
  add_percentiles(out, "TTFT", s.ttft_ms);
  out += rule("Time per Output Token (excl. 1st token)", '-');
  add_percentiles(out, "TPOT", s.tpot_ms);
  out += rule("Inter-Token Latency", '-');
  add_percentiles(out, "ITL", s.itl_ms);
  out += row("Max ITL (ms)", fixed(s.itl_ms.max));
  out += std::string(50, '=') + "\n";
  return out;
}

nlohmann::json summary_json(const BenchSummary& s, const nlohmann::json& run) {
  nlohmann::json j = run;
  j["completed"] = s.completed;
  j["failed"] = s.failed;
  j["duration"] = s.duration_s;
  j["total_input_tokens"] = s.total_input;
  j["total_output_tokens"] = s.total_output;
  j["request_throughput"] = s.request_throughput;
  j["input_throughput"] = s.input_throughput;
  j["output_throughput"] = s.output_throughput;
  j["total_throughput"] = s.total_throughput;
  j["concurrency"] = s.concurrency;
  put_percentiles(j, "e2e_latency", s.e2e_ms);
  put_percentiles(j, "ttft", s.ttft_ms);
  put_percentiles(j, "tpot", s.tpot_ms);
  put_percentiles(j, "itl", s.itl_ms);
  if (!s.first_error.empty()) j["first_error"] = s.first_error;
  return j;
}

}  // namespace seam
