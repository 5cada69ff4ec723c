// LoadRunner: sends benchmark requests to /v1/completions (streamed,
// ignore_eos, max_tokens = the drawn output length, prompt = token ids, plus
// the spec's extra members such as a response_format) at a
// Poisson request rate and/or under a concurrency cap, one thread per
// in-flight request, and records what each one measured.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_serving/bench_metrics.h"
#include "bench_serving/random_dataset.h"
#include "bench_serving/sse_client.h"

namespace seam {

struct LoadSpec {
  HttpTarget target;
  std::string model;  // the "model" field; empty: not sent
  int logprobs = -1;   // >= 0: every request asks for "logprobs": k (the sampled token's and k top ones)
  // Members added to every request body (e.g. a response_format for structured output:
  // --json-schema, --extra-request-body); null: none. They replace the runner's own members.
  nlohmann::ordered_json extra_body;
  double request_rate = std::numeric_limits<double>::infinity();  // requests/s; inf: all at once
  int max_concurrency = 0;  // 0: no cap
  uint64_t seed = 1;        // of the arrival times
};

// One request, measured.
RequestRecord run_one_request(const LoadSpec& spec, const BenchRequest& request);

// All requests; returns the records (in input order) and the wall time taken.
std::vector<RequestRecord> run_load(const LoadSpec& spec, const std::vector<BenchRequest>& requests,
                                    double& duration_s);

}  // namespace seam
