// ServerMetrics: what GET /metrics reports, in Prometheus text format --
// request counts by finish reason, TTFT / inter-token / end-to-end latency
// histograms measured by the server, and the engine's own counters (steps by
// graph path, eager steps by reason, KV usage, ...) generated from the
// EngineStats field table (api/engine_stats.h).
// Thread-safe: observed from the engine thread's callbacks and HTTP threads.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "api/engine_stats.h"
#include "api/finish_reason.h"

namespace seam {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double x, uint64_t n = 1);
  // The _bucket/_sum/_count lines of metric `name` (cumulative buckets, +Inf last).
  void render(std::string& out, const std::string& name, const std::string& help) const;
  uint64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // [bounds + 1], not cumulative
  double sum_ = 0;
  uint64_t count_ = 0;
};

class ServerMetrics {
 public:
  ServerMetrics();
  void observe_ttft(double seconds);
  void observe_itl(double seconds, uint64_t n_tokens);  // one gap spread over n tokens
  // A choice ended after `e2e_seconds`; `error` when the engine failed it.
  void count_finished(FinishReason reason, bool error, double e2e_seconds);
  // A request refused before it reached the engine (HTTP status).
  void count_rejected(int status);

  // The whole /metrics page. `engine_stats` is null while the engine loads.
  std::string render(const EngineStats* engine_stats, int64_t n_in_flight) const;

 private:
  mutable std::mutex mu_;
  Histogram ttft_, itl_, e2e_;
  std::map<std::string, uint64_t> finished_;  // by finish reason
  std::map<int, uint64_t> rejected_;          // by HTTP status
};

}  // namespace seam
