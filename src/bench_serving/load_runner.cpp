#include "bench_serving/load_runner.h"

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

namespace seam {

namespace {
using Clock = std::chrono::steady_clock;
double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

RequestRecord run_one_request(const LoadSpec& spec, const BenchRequest& request) {
  nlohmann::ordered_json body;  // ordered: a schema in extra_body keeps its property order
  if (!spec.model.empty()) body["model"] = spec.model;
  body["prompt"] = request.prompt_ids;
  body["max_tokens"] = request.output_len;
  body["temperature"] = 0.0;
  body["ignore_eos"] = true;
  body["stream"] = true;
  if (spec.logprobs >= 0) body["logprobs"] = spec.logprobs;
  body["stream_options"] = {{"include_usage", true}};
  if (spec.extra_body.is_object())
    for (auto it = spec.extra_body.begin(); it != spec.extra_body.end(); ++it) body[it.key()] = *it;

  RequestRecord rec;
  rec.prompt_len = int(request.prompt_ids.size());
  bool got_usage = false, got_done = false;
  Clock::time_point last;
  const Clock::time_point start = Clock::now();
  const SseResponse res = post_sse(spec.target, "/v1/completions", body.dump(),
                                   [&](const std::string& data, Clock::time_point t) {
    if (data == "[DONE]") {
      got_done = true;
      return true;
    }
    const nlohmann::json j = nlohmann::json::parse(data, nullptr, false);
    if (j.is_discarded()) {
      rec.error = "unparsable stream event: " + data.substr(0, 200);
      return false;
    }
    if (j.contains("error")) {
      rec.error = j["error"].dump();
      return false;
    }
    if (j.contains("choices") && j["choices"].is_array() && !j["choices"].empty()) {
      const auto& c = j["choices"][0];
      if (c.contains("text") && c["text"].is_string() && !c["text"].get<std::string>().empty()) {
        if (rec.ttft_s == 0.0) {
          rec.ttft_s = seconds(t - start);
        } else {
          rec.itl_s.push_back(seconds(t - last));
        }
        last = t;
      }
    }
    if (j.contains("usage") && j["usage"].is_object()) {
      rec.output_len = j["usage"].value("completion_tokens", 0);
      got_usage = true;
    }
    return true;
  });
  rec.latency_s = seconds(Clock::now() - start);
  if (!rec.error.empty()) return rec;
  if (res.status != 200 || !res.error.empty()) {
    rec.error = "HTTP " + std::to_string(res.status) + ": " + res.error.substr(0, 500);
    return rec;
  }
  if (!got_done || !got_usage) {
    rec.error = !got_done ? "the stream ended without [DONE]" : "the stream had no usage chunk";
    return rec;
  }
  rec.success = true;
  return rec;
}

std::vector<RequestRecord> run_load(const LoadSpec& spec, const std::vector<BenchRequest>& requests,
                                    double& duration_s) {
  std::vector<RequestRecord> records(requests.size());
  std::mutex mu;
  std::condition_variable cv;
  int n_running = 0;
  std::mt19937_64 rng(spec.seed);
  const bool poisson = std::isfinite(spec.request_rate) && spec.request_rate > 0;
  std::exponential_distribution<double> gap(poisson ? spec.request_rate : 1.0);

  std::vector<std::thread> threads;
  threads.reserve(requests.size());
  const Clock::time_point start = Clock::now();
  double next_arrival_s = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (poisson) {
      // Arrivals follow the schedule; a concurrency cap only delays a send further.
      std::this_thread::sleep_until(start + std::chrono::duration_cast<Clock::duration>(
                                                std::chrono::duration<double>(next_arrival_s)));
      next_arrival_s += gap(rng);
    }
    if (spec.max_concurrency > 0) {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return n_running < spec.max_concurrency; });
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      ++n_running;
    }
    threads.emplace_back([&, i] {
      records[i] = run_one_request(spec, requests[i]);
      std::lock_guard<std::mutex> lock(mu);
      --n_running;
      cv.notify_all();
    });
  }
  for (auto& t : threads) t.join();
  duration_s = seconds(Clock::now() - start);
  return records;
}

}  // namespace seam
