// What one benchmark request measured, and the summary over a run, computed
// as sglang's bench_serving computes it:
//   TTFT  time from sending to the first chunk with text
//   ITL   gaps between consecutive chunks with text (all requests pooled)
//   TPOT  (latency - TTFT) / (output tokens - 1), per request with > 1 token
//   E2E   latency of the whole request
// Output token counts come from the server's usage, not from counting chunks.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace seam {

struct RequestRecord {
  bool success = false;
  std::string error;
  int prompt_len = 0;   // tokens sent
  int output_len = 0;   // usage.completion_tokens
  double ttft_s = 0;
  double latency_s = 0;
  std::vector<double> itl_s;
};

struct Percentiles {
  double mean = 0, median = 0, p90 = 0, p99 = 0, max = 0;
};

// numpy.percentile with linear interpolation; all zeros for an empty list.
Percentiles percentiles(std::vector<double> xs);

struct BenchSummary {
  int completed = 0;
  int failed = 0;
  double duration_s = 0;
  long long total_input = 0, total_output = 0;
  double request_throughput = 0, input_throughput = 0, output_throughput = 0, total_throughput = 0;
  double concurrency = 0;  // sum of latencies / duration
  Percentiles e2e_ms, ttft_ms, tpot_ms, itl_ms;
  std::string first_error;
};

BenchSummary summarize(const std::vector<RequestRecord>& records, double duration_s);

// The sglang-style result table.
std::string format_table(const BenchSummary& s, const nlohmann::json& run_info);
// One JSON object: run_info merged with every summary figure (sglang's key names).
nlohmann::json summary_json(const BenchSummary& s, const nlohmann::json& run_info);

}  // namespace seam
