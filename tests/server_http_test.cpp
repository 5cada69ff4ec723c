// seam serve over real HTTP: every kind of bad request gets a 4xx with an
// OpenAI error body and leaves the server serving; overload gets 503; /health
// is 503 until the engine is ready; /v1/models and /metrics have their shape.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include <nlohmann/json.hpp>

#include "bench_serving/http_client.h"
#include "bench_serving/sse_client.h"
#include "engine/engine.h"
#include "server/http_server.h"
#include "server_process.h"
#include "test_util.h"

namespace seam {
namespace {

using json = nlohmann::json;

HttpResult post(int port, const std::string& path, const std::string& body) {
  HttpClient cli("127.0.0.1", port);
  cli.set_read_timeout(120, 0);
  return cli.Post(path.c_str(), body, "application/json");
}

void expect_error_body(const std::string& body, const std::string& where) {
  const json j = json::parse(body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error")) << where << ": " << body;
  const json& e = j["error"];
  EXPECT_TRUE(e.contains("message") && e["message"].is_string() && !e["message"].get<std::string>().empty()) << where;
  EXPECT_TRUE(e.contains("type") && e["type"].is_string()) << where;
  EXPECT_TRUE(e.contains("param")) << where;
  EXPECT_TRUE(e.contains("code")) << where;
}

class ServerHttp : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new test::ServerProcess({"--served-model-name", "stories"}); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static test::ServerProcess* server_;
  int port() const { return server_->port(); }
};
test::ServerProcess* ServerHttp::server_ = nullptr;

struct ErrorCase {
  const char* path;
  std::string body;
  int status;
  const char* param;  // expected error.param; "" for null
};

TEST_F(ServerHttp, BadRequestsGet4xxAndTheServerKeepsServing) {
  std::string long_prompt = "[";
  for (int i = 0; i < 500; ++i) long_prompt += (i ? "," : "") + std::to_string(3 + i % 500);
  long_prompt += "]";
  const std::vector<ErrorCase> cases = {
      {"/v1/completions", "{\"prompt\": \"x\"", 400, ""},
      {"/v1/completions", "", 400, ""},
      {"/v1/completions", "[]", 400, ""},
      {"/v1/completions", "{\"prompt\": 12}", 400, "prompt"},
      {"/v1/completions", "{\"prompt\": \"x\", \"temperature\": \"warm\"}", 400, "temperature"},
      {"/v1/completions", "{\"prompt\": \"x\", \"max_tokens\": -3}", 400, "max_tokens"},
      {"/v1/completions", "{\"prompt\": \"x\", \"max_tokens\": 1000000}", 400, "max_tokens"},
      {"/v1/completions", "{\"prompt\": \"x\", \"max_tokens\": 1e300}", 400, "max_tokens"},
      {"/v1/completions", "{\"prompt\": " + long_prompt + ", \"max_tokens\": 20}", 400, "max_tokens"},
      {"/v1/completions", "{\"prompt\": [1, 2, 512]}", 400, "prompt"},
      {"/v1/completions", "{\"prompt\": []}", 400, "prompt"},
      {"/v1/completions", "{\"prompt\": \"x\", \"n\": 17}", 400, "n"},
      {"/v1/completions", "{\"prompt\": \"x\", \"n\": 0}", 400, "n"},
      {"/v1/completions", "{\"prompt\": \"\xc3\x28\"}", 400, ""},  // invalid UTF-8
      {"/v1/completions", "{\"prompt\": \"x\", \"model\": \"gpt-4\"}", 404, "model"},
      {"/v1/completions", "{\"prompt\": \"x\", \"logprobs\": 21}", 400, "logprobs"},
      {"/v1/completions", "{\"prompt\": \"x\", \"logit_bias\": {\"600\": 1}}", 400, "logit_bias"},
      {"/v1/completions", "{\"prompt\": \"x\", \"top_p\": 0}", 400, "top_p"},
      {"/v1/completions", "{\"prompt\": \"x\", \"repetition_penalty\": -1}", 400, "repetition_penalty"},
      {"/v1/completions", "{\"prompt\": \"x\", \"stop\": [\"\"]}", 400, "stop"},
      {"/v1/completions", "{\"prompt\": \"x\", \"stream\": 1}", 400, "stream"},
      {"/v1/chat/completions", "{\"messages\": []}", 400, "messages"},
      {"/v1/chat/completions", "{\"messages\": [{\"role\": \"robot\", \"content\": \"x\"}]}", 400, "messages[0].role"},
      {"/v1/chat/completions", "{\"messages\": [{\"role\": \"user\"}], \"max_tokens\": 600}", 400, "messages"},
      {"/v1/chat/completions", "{\"prompt\": \"x\"}", 400, "prompt"},
      {"/v1/chat/completions",
       "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"logprobs\": true, \"top_logprobs\": 21}", 400,
       "top_logprobs"},
      {"/v1/nothing", "{}", 404, ""},
  };
  for (const ErrorCase& c : cases) {
    auto res = post(port(), c.path, c.body);
    ASSERT_TRUE(res) << c.body << ": no response: " << res.error();
    EXPECT_EQ(res->status, c.status) << c.path << " " << c.body << " -> " << res->body;
    expect_error_body(res->body, c.body);
    const json j = json::parse(res->body, nullptr, false);
    if (!j.is_discarded() && j.contains("error")) {
      if (std::string(c.param).empty()) {
        EXPECT_TRUE(j["error"]["param"].is_null()) << c.body << " -> " << res->body;
      } else {
        EXPECT_EQ(j["error"]["param"], c.param) << c.body << " -> " << res->body;
      }
    }
  }
  // The same errors on a streamed request come back as plain 4xx, before any event.
  auto res = post(port(), "/v1/completions", "{\"prompt\": \"x\", \"max_tokens\": -1, \"stream\": true}");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  expect_error_body(res->body, "stream");

  // A body with curl's default content type (a form) is refused, not run: a
  // cross-site form POST must not reach the engine (issue 26, finding 9).
  {
    HttpClient cli("127.0.0.1", port());
    const std::string big = "{\"prompt\": \"" + std::string(20000, 'a') + "\", \"max_tokens\": 1}";
    auto r = cli.Post("/v1/completions", big, "application/x-www-form-urlencoded");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 415) << r->body;
    expect_error_body(r->body, "form");
  }

  // Still serving.
  res = post(port(), "/v1/completions", "{\"prompt\": \"Once upon a time\", \"max_tokens\": 5, \"temperature\": 0}");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json ok = json::parse(res->body);
  EXPECT_EQ(ok["choices"][0]["text"], ", there was a little");
  EXPECT_EQ(ok["usage"]["completion_tokens"], 5);
  EXPECT_EQ(ok["model"], "stories");
}

TEST_F(ServerHttp, ModelsHealthAndMetrics) {
  HttpClient cli("127.0.0.1", port());
  auto health = cli.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto models = cli.Get("/v1/models");
  ASSERT_TRUE(models);
  ASSERT_EQ(models->status, 200);
  const json m = json::parse(models->body);
  EXPECT_EQ(m["object"], "list");
  ASSERT_EQ(m["data"].size(), 1u);
  EXPECT_EQ(m["data"][0]["id"], "stories");
  EXPECT_EQ(m["data"][0]["object"], "model");
  EXPECT_EQ(m["data"][0]["max_model_len"], 512);

  ASSERT_EQ(post(port(), "/v1/completions", "{\"prompt\": \"The cat\", \"max_tokens\": 4}")->status, 200);
  auto metrics = cli.Get("/metrics");
  ASSERT_TRUE(metrics);
  ASSERT_EQ(metrics->status, 200);
  for (const char* name :
       {"seam_requests_total{finish_reason=\"length\"}", "seam_prompt_tokens_total", "seam_generation_tokens_total",
        "seam_time_to_first_token_seconds_bucket{le=\"+Inf\"}", "seam_inter_token_latency_seconds_count",
        "seam_num_running_reqs", "seam_num_waiting_reqs", "seam_kv_usage_ratio", "seam_kv_free_tokens",
        "seam_steps_by_path_total{path=\"decode_graph\"}", "seam_steps_by_path_total{path=\"piecewise\"}",
        "seam_steps_by_path_total{path=\"eager\"}", "seam_eager_steps_by_reason_total",
        "seam_captures_after_seal_total 0", "seam_host_ms_per_step{phase=\"schedule\"}",
        "seam_host_ms_per_step{phase=\"prepare\"}", "seam_host_ms_per_step{phase=\"launch\"}",
        "seam_host_ms_per_step{phase=\"wait\"}", "seam_host_ms_per_step{phase=\"process\"}",
        "seam_host_ms_per_step{phase=\"detokenize\"}", "seam_host_ms_per_step{phase=\"handoff\"}",
        "seam_gpu_ms_per_step", "seam_gpu_busy_fraction", "seam_step_wall_ms_per_step"})
    EXPECT_NE(metrics->body.find(name), std::string::npos) << name;
}

// Enough tokens to keep a stream open while the test looks at the server.
const char* k_long_stream =
    "{\"prompt\": \"Once upon a time\", \"max_tokens\": 480, \"ignore_eos\": true, \"stream\": true}";

TEST(ServerOverload, BeyondMaxQueuedRequestsIs503) {
  test::ServerProcess server({"--max-queued-requests", "2"});
  HttpTarget target{"127.0.0.1", server.port(), 120};
  std::atomic<int> n_started{0};
  std::atomic<bool> release{false};
  std::vector<std::thread> streams;
  for (int i = 0; i < 2; ++i)
    streams.emplace_back([&] {
      bool counted = false;
      post_sse(target, "/v1/completions", k_long_stream, [&](const std::string&, auto) {
        if (!counted) counted = true, ++n_started;
        while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        return false;  // walk away: the server aborts the request
      });
    });
  while (n_started.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto res = post(server.port(), "/v1/completions", "{\"prompt\": \"x\", \"max_tokens\": 2}");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503) << res->body;
  expect_error_body(res->body, "overload");
  EXPECT_EQ(res->get_header_value("Retry-After"), "1") << "a 503 says when to come back";
  release = true;
  for (auto& t : streams) t.join();
  // n choices count against the limit too: more than the limit at once can never
  // be admitted, so that is the request's fault (400 naming n), not a retry.
  auto too_many = post(server.port(), "/v1/completions", "{\"prompt\": \"x\", \"max_tokens\": 2, \"n\": 3}");
  ASSERT_TRUE(too_many);
  EXPECT_EQ(too_many->status, 400) << too_many->body;
  EXPECT_EQ(json::parse(too_many->body)["error"]["param"], "n") << too_many->body;
  // Once the aborted streams are gone, requests are admitted again.
  int status = 0;
  for (int i = 0; i < 200 && status != 200; ++i) {
    auto r = post(server.port(), "/v1/completions", "{\"prompt\": \"x\", \"max_tokens\": 2}");
    status = r ? r->status : 0;
    if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(status, 200);
}

TEST(ServerLifecycle, HealthIs503UntilTheEngineIsAttached) {
  ServerOptions opt;
  opt.port = 0;
  opt.served_model_name = "stories";
  HttpServer server(opt);
  server.start();
  HttpClient cli("127.0.0.1", server.port());
  auto health = cli.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503);
  auto early = cli.Post("/v1/completions", "{\"prompt\": \"x\"}", "application/json");
  ASSERT_TRUE(early);
  EXPECT_EQ(early->status, 503);
  expect_error_body(early->body, "loading");
  auto metrics = cli.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("seam_ready 0"), std::string::npos);

  EngineConfig cfg;
  cfg.model_path = test::stories_dir();
  cfg.device = Device::cpu;
  Engine engine(cfg);
  server.attach(engine);
  health = cli.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto ok = cli.Post("/v1/completions", "{\"prompt\": \"Once upon a time\", \"max_tokens\": 3, \"temperature\": 0}",
                     "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  server.stop();
  // A second server on a port in use fails with a clear error, not a crash.
  ServerOptions taken = opt;
  HttpServer a(taken);
  a.start();
  taken.port = a.port();
  HttpServer b(taken);
  EXPECT_THROW(b.start(), Error);
}

}  // namespace
}  // namespace seam
