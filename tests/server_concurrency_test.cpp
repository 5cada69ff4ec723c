// seam serve under load: 200 concurrent streaming requests all complete with
// exactly the greedy output of an offline engine run on the same prompts; and
// clients that walk away mid-stream get their requests aborted and their KV
// freed (the pool is whole again; the prefix cache is off so "free" is exact).
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <regex>
#include <thread>

#include <nlohmann/json.hpp>

#include "bench_serving/http_client.h"
#include "bench_serving/sse_client.h"
#include "engine/engine.h"
#include "server_process.h"
#include "test_util.h"

namespace seam {
namespace {

using json = nlohmann::json;

// The value of the first /metrics sample line starting with `name` + " ".
double metric(const std::string& page, const std::string& name) {
  const size_t pos = page.find("\n" + name + " ");
  if (pos == std::string::npos) return -1;
  return std::stod(page.substr(pos + name.size() + 2));
}

std::string get_metrics(int port) {
  HttpClient cli("127.0.0.1", port);
  auto res = cli.Get("/metrics");
  return res && res->status == 200 ? "\n" + res->body : "";
}

struct Streamed {
  std::string text;
  std::string finish;
  int n_completion = -1;
  bool done = false;
  std::string error;
};

Streamed stream_completion(int port, const json& body) {
  Streamed out;
  HttpTarget target{"127.0.0.1", port, 300};
  const SseResponse res = post_sse(target, "/v1/completions", body.dump(), [&](const std::string& data, auto) {
    if (data == "[DONE]") {
      out.done = true;
      return true;
    }
    const json j = json::parse(data, nullptr, false);
    if (j.is_discarded()) {
      out.error = "bad event " + data;
      return false;
    }
    for (const auto& c : j.value("choices", json::array())) {
      out.text += c.value("text", "");
      if (c.contains("finish_reason") && c["finish_reason"].is_string()) out.finish = c["finish_reason"];
    }
    if (j.contains("usage") && j["usage"].is_object()) out.n_completion = j["usage"]["completion_tokens"];
    return true;
  });
  if (res.status != 200) out.error = "HTTP " + std::to_string(res.status) + " " + res.error;
  return out;
}

TEST(ServerConcurrency, TwoHundredStreamsMatchOfflineGreedyAndAbortsFreeKv) {
  test::ServerProcess server({"--disable-radix-cache"});
  const int port = server.port();

  // 200 prompts of token ids (BOS first), lengths 4..60, greedy, 24 tokens.
  const int n_requests = 200, n_new = 24;
  std::mt19937 rng(12345);
  std::vector<std::vector<int32_t>> prompts(n_requests);
  for (auto& p : prompts) {
    p.push_back(1);
    const int len = std::uniform_int_distribution<int>(3, 59)(rng);
    for (int i = 0; i < len; ++i) p.push_back(std::uniform_int_distribution<int>(3, 511)(rng));
  }

  // Offline reference: the same engine configuration, in this process.
  std::vector<GenerateResult> offline;
  {
    EngineConfig cfg;
    cfg.model_path = test::stories_dir();
    cfg.device = Device::cpu;
    cfg.disable_radix_cache = true;
    Engine engine(cfg);
    SamplingParams p;
    p.temperature = 0;
    p.max_new_tokens = n_new;
    offline = engine.generate(prompts, std::vector<SamplingParams>(prompts.size(), p));
  }

  std::vector<Streamed> got(n_requests);
  {
    std::vector<std::thread> threads;
    for (int i = 0; i < n_requests; ++i)
      threads.emplace_back([&, i] {
        json body = {{"prompt", prompts[size_t(i)]}, {"max_tokens", n_new},          {"temperature", 0},
                     {"stream", true},               {"stream_options", {{"include_usage", true}}}};
        got[size_t(i)] = stream_completion(port, body);
      });
    for (auto& t : threads) t.join();
  }
  int n_same = 0;
  for (int i = 0; i < n_requests; ++i) {
    const Streamed& s = got[size_t(i)];
    const GenerateResult& r = offline[size_t(i)];
    ASSERT_TRUE(s.error.empty()) << "request " << i << ": " << s.error;
    EXPECT_TRUE(s.done) << "request " << i << " had no [DONE]";
    EXPECT_EQ(s.text, r.text) << "request " << i;
    EXPECT_EQ(s.n_completion, int(r.output_ids.size())) << "request " << i;
    EXPECT_EQ(s.finish, finish_reason_name(r.finish_reason)) << "request " << i;
    n_same += s.text == r.text;
  }
  EXPECT_EQ(n_same, n_requests);

  // Clients that walk away: 40 long streams closed after their third event,
  // while 10 normal requests run beside them.
  std::atomic<int> n_walked{0};
  {
    std::vector<std::thread> threads;
    for (int i = 0; i < 40; ++i)
      threads.emplace_back([&, i] {
        json body = {{"prompt", prompts[size_t(i)]}, {"max_tokens", 400}, {"ignore_eos", true}, {"stream", true}};
        int n_events = 0;
        HttpTarget target{"127.0.0.1", port, 300};
        post_sse(target, "/v1/completions", body.dump(), [&](const std::string&, auto) { return ++n_events < 3; });
        if (n_events == 3) ++n_walked;
      });
    for (int i = 0; i < 10; ++i)
      threads.emplace_back([&, i] {
        json body = {{"prompt", prompts[size_t(100 + i)]}, {"max_tokens", n_new}, {"temperature", 0}, {"stream", true}};
        const Streamed s = stream_completion(port, body);
        EXPECT_EQ(s.text, offline[size_t(100 + i)].text);
      });
    for (auto& t : threads) t.join();
  }
  EXPECT_EQ(n_walked.load(), 40);

  // The aborted requests leave the engine and give back every KV slot.
  std::string page;
  bool idle = false;
  for (int i = 0; i < 600 && !idle; ++i) {
    page = get_metrics(port);
    idle = metric(page, "seam_num_running_reqs") == 0 && metric(page, "seam_num_waiting_reqs") == 0 &&
           metric(page, "seam_server_in_flight_requests") == 0 &&
           metric(page, "seam_kv_free_tokens") == metric(page, "seam_kv_pool_tokens");
    if (!idle) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(idle) << page;
  EXPECT_GT(metric(page, "seam_kv_pool_tokens"), 0);
  EXPECT_EQ(metric(page, "seam_kv_cached_tokens"), 0);
  EXPECT_GE(metric(page, "seam_requests_total{finish_reason=\"abort\"}"), 40);
  EXPECT_EQ(metric(page, "seam_captures_after_seal_total"), 0);
  // The server still answers after all that.
  const Streamed after = stream_completion(port, {{"prompt", prompts[0]}, {"max_tokens", n_new}, {"temperature", 0},
                                                  {"stream", true}});
  EXPECT_EQ(after.text, offline[0].text);
}

}  // namespace
}  // namespace seam
