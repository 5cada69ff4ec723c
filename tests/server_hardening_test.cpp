// seam serve's lifecycle and access rules (issue 26, findings 3, 5, 9 and 10):
// graceful shutdown that a trickling client cannot hold up (and a second signal
// that exits at once); a client hanging up on a non-streamed request aborts it;
// --api-key and the Content-Type check; 400 for a request that can never be
// admitted, 503 with Retry-After for a full queue.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_serving/sse_client.h"
#include "raw_socket.h"
#include "server/api_key.h"
#include "server_probe.h"
#include "server_process.h"
#include "test_util.h"

namespace seam {
namespace {

using json = nlohmann::json;
using test::metric;
using test::RawSocket;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// 16 choices of 480 tokens: seconds of CPU engine time, so it is surely still
// running when the test acts on it.
const std::string k_long_request =
    "{\"prompt\": \"Once upon a time\", \"max_tokens\": 480, \"ignore_eos\": true, \"n\": 16}";

// A client that sends a request header one byte every 100 ms until stopped.
class Trickler {
 public:
  explicit Trickler(int port) : sock_(port) {
    thread_ = std::thread([this] {
      const std::string h = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + std::string(400, 'a');
      for (size_t i = 0; !stop_.load() && sock_.send(std::string(1, h[i % h.size()])); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    });
  }
  ~Trickler() {
    stop_ = true;
    thread_.join();
  }

 private:
  RawSocket sock_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Finding 3: on SIGTERM a running stream still finishes, then the server exits
// 0 at once, though a client keeps trickling a header and another sits idle.
TEST(ServerShutdown, RunningRequestsFinishAndTricklersDoNotHoldItUp) {
  test::ServerProcess server({"--graceful-shutdown-timeout", "20", "--http-header-timeout", "60"});
  Trickler trickler(server.port());
  RawSocket idle(server.port());
  std::atomic<bool> first{false};
  std::string finish;
  bool done = false;
  std::thread stream([&] {
    HttpTarget t{"127.0.0.1", server.port(), 60};
    post_sse(t, "/v1/completions",
             "{\"prompt\": \"Once upon a time\", \"max_tokens\": 300, \"ignore_eos\": true, \"n\": 8, \"stream\": true}",
             [&](const std::string& data, auto) {
               first = true;
               if (data == "[DONE]") done = true;
               const json j = json::parse(data, nullptr, false);
               if (j.is_object() && j.contains("choices") && j["choices"][0]["finish_reason"].is_string())
                 finish = j["choices"][0]["finish_reason"];
               return true;
             });
  });
  while (!first.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const auto t0 = Clock::now();
  server.signal(SIGTERM);
  const auto status = server.wait_exit(15);
  stream.join();
  ASSERT_TRUE(status.has_value()) << "still running 15 s after SIGTERM; log:\n" << server.log();
  EXPECT_EQ(*status, 0) << server.log();
  EXPECT_LT(since(t0), 10.0);  // the stream's own time, not the 20 s timeout nor the trickler's
  EXPECT_TRUE(done);
  EXPECT_EQ(finish, "length");  // finished, not aborted
  EXPECT_TRUE(idle.closed_within(1));
}

// Finding 3: a request longer than --graceful-shutdown-timeout is aborted at
// the timeout and the server exits 0; a second signal exits at once.
TEST(ServerShutdown, LongRequestsAreAbortedAtTheTimeoutAndASecondSignalExitsNow) {
  {
    test::ServerProcess server({"--graceful-shutdown-timeout", "1"});
    Trickler trickler(server.port());
    RawSocket c(server.port());
    c.send(test::raw_post("/v1/completions", k_long_request));
    while (metric(test::metrics_page(server.port()), "seam_server_in_flight_requests") < 16)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const auto t0 = Clock::now();
    server.signal(SIGTERM);
    const auto status = server.wait_exit(10);
    ASSERT_TRUE(status.has_value()) << server.log();
    EXPECT_EQ(*status, 0) << server.log();
    EXPECT_GE(since(t0), 0.9);  // it waited for the request...
    EXPECT_LT(since(t0), 5.0);  // ...for the timeout, not for the request's whole run
    const std::string got = c.read_to_eof(5);
    EXPECT_NE(got.find("\"finish_reason\":\"abort\""), std::string::npos) << got.substr(0, 300);
  }
  {
    test::ServerProcess server({"--graceful-shutdown-timeout", "60"});
    RawSocket c(server.port());
    c.send(test::raw_post("/v1/completions", k_long_request));
    while (metric(test::metrics_page(server.port()), "seam_server_in_flight_requests") < 16)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    server.signal(SIGTERM);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const auto t0 = Clock::now();
    server.signal(SIGTERM);
    const auto status = server.wait_exit(5);
    ASSERT_TRUE(status.has_value()) << server.log();
    EXPECT_LT(since(t0), 1.0);
    EXPECT_NE(*status, 0);  // not a clean shutdown
  }
}

// Finding 5: a client that hangs up on a non-streamed request aborts it (all
// its choices) within an engine step or so, and its slots are free again.
TEST(ServerDisconnect, HangingUpOnAWholeRequestAbortsIt) {
  test::ServerProcess server({"--max-queued-requests", "64"});
  const int port = server.port();
  std::vector<RawSocket> clients;
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back(port);
    clients.back().send(test::raw_post("/v1/completions", k_long_request));
  }
  while (metric(test::metrics_page(port), "seam_server_in_flight_requests") < 64)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const auto t0 = Clock::now();
  for (auto& c : clients) c.close();
  std::string page;
  while (since(t0) < 5) {
    page = test::metrics_page(port);
    if (metric(page, "seam_server_in_flight_requests") == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(metric(page, "seam_server_in_flight_requests"), 0);
  EXPECT_LT(since(t0), 1.0) << "the aborts took " << since(t0) << " s";
  EXPECT_EQ(metric(page, "seam_requests_total{finish_reason=\"abort\"}"), 64);
  EXPECT_EQ(metric(page, "seam_requests_total{finish_reason=\"length\"}"), 0);
  // The slots are back: a request that needs all 64 is admitted.
  HttpClient cli("127.0.0.1", port);
  cli.set_read_timeout(60);
  std::string all;
  for (int i = 0; i < 4; ++i) all += std::string(i ? "," : "") + "\"Once upon a time\"";
  auto res = cli.Post("/v1/completions", "{\"prompt\": [" + all + "], \"max_tokens\": 2, \"n\": 16}", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
}

json error_of(const HttpResult& res) {
  const json j = json::parse(res->body, nullptr, false);
  return j.is_object() && j.contains("error") ? j["error"] : json();
}

// Finding 9: --api-key guards /v1/* (401 with an OpenAI error body), /health
// and /metrics stay open; SEAM_API_KEY works the same; POSTs that are not
// application/json are refused with 415 and never run.
TEST(ServerAuth, ApiKeyGuardsTheApiAndPostsMustBeJson) {
  for (const bool from_env : {false, true}) {
    if (from_env) setenv("SEAM_API_KEY", "s3cret-key", 1);
    test::ServerProcess server(from_env ? std::vector<std::string>{}
                                        : std::vector<std::string>{"--api-key", "s3cret-key"});
    if (from_env) unsetenv("SEAM_API_KEY");
    const int port = server.port();
    const std::string body = "{\"prompt\": \"Once upon a time\", \"max_tokens\": 2}";
    for (const std::string auth : {"", "Bearer wrong", "Bearer s3cret-ke", "Bearer s3cret-keyy", "s3cret-key"}) {
      HttpClient cli("127.0.0.1", port);
      if (!auth.empty()) cli.set_header("Authorization", auth);
      auto res = cli.Post("/v1/completions", body, "application/json");
      ASSERT_TRUE(res);
      EXPECT_EQ(res->status, 401) << "'" << auth << "': " << res->body;
      EXPECT_EQ(error_of(res)["code"], "invalid_api_key") << res->body;
      EXPECT_EQ(cli.Get("/v1/models")->status, 401);
    }
    HttpClient open("127.0.0.1", port);
    EXPECT_EQ(open.Get("/health")->status, 200);
    EXPECT_EQ(open.Get("/metrics")->status, 200);

    HttpClient ok("127.0.0.1", port);
    ok.set_header("Authorization", "Bearer s3cret-key");
    ok.set_read_timeout(30);
    EXPECT_EQ(ok.Get("/v1/models")->status, 200);
    auto res = ok.Post("/v1/completions", body, "application/json; charset=utf-8");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200) << res->body;

    const double steps = test::settled_metric(port, "seam_steps_total");
    for (const std::string type : {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data", ""}) {
      auto r = ok.Post("/v1/completions", body, type);
      ASSERT_TRUE(r);
      EXPECT_EQ(r->status, 415) << "'" << type << "': " << r->body;
      EXPECT_TRUE(error_of(r).is_object()) << r->body;
    }
    EXPECT_EQ(test::settled_metric(port, "seam_steps_total"), steps);
  }
  EXPECT_TRUE(api_key_matches("Bearer k", "k"));
  EXPECT_FALSE(api_key_matches("Bearer k", ""));
  EXPECT_FALSE(api_key_matches("Bearer ", ""));
  EXPECT_TRUE(is_loopback_host("127.0.0.1"));
  EXPECT_TRUE(is_loopback_host("::1"));
  EXPECT_FALSE(is_loopback_host("0.0.0.0"));
}

// Finding 10: more choices than --max-queued-requests can never be admitted
// (400 naming n); a full queue is 503 with Retry-After.
TEST(ServerAdmission, NeverAdmissibleIs400AndAFullQueueIs503WithRetryAfter) {
  test::ServerProcess server({"--max-queued-requests", "10"});
  const int port = server.port();
  HttpClient cli("127.0.0.1", port);
  cli.set_read_timeout(60);
  auto never = cli.Post("/v1/completions", "{\"prompt\": \"x\", \"max_tokens\": 2, \"n\": 16}", "application/json");
  ASSERT_TRUE(never);
  EXPECT_EQ(never->status, 400) << never->body;
  EXPECT_EQ(error_of(never)["param"], "n") << never->body;

  RawSocket holder(port);  // 10 choices: the queue is full while they run
  holder.send(test::raw_post("/v1/completions",
                             "{\"prompt\": \"Once upon a time\", \"max_tokens\": 480, \"ignore_eos\": true, \"n\": 10}"));
  while (metric(test::metrics_page(port), "seam_server_in_flight_requests") < 10)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto full = cli.Post("/v1/completions", "{\"prompt\": \"x\", \"max_tokens\": 2}", "application/json");
  ASSERT_TRUE(full);
  EXPECT_EQ(full->status, 503) << full->body;
  EXPECT_EQ(full->get_header_value("Retry-After"), "1");
  EXPECT_EQ(error_of(full)["type"], "server_overloaded") << full->body;
}

}  // namespace
}  // namespace seam
