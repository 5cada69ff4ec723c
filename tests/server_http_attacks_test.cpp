// seam serve against hostile and broken HTTP clients (issue 26, findings 2, 4,
// 7, 8 and 11), over raw sockets to 127.0.0.1: slow and idle connections do not
// delay /health; incomplete bodies never run; pipelined requests all get
// answers; header floods get 431; HTTP/1.0, conflicting framing, 405s, range
// errors and /metrics numbers are answered as they should be.
#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <sys/resource.h>

#include "raw_socket.h"
#include "server_probe.h"
#include "server_process.h"
#include "test_util.h"

namespace seam {
namespace {

using json = nlohmann::json;
using test::count_of;
using test::metric;
using test::RawSocket;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

const std::string k_small_request = "{\"prompt\": \"Once upon a time\", \"max_tokens\": 2}";

// One server for the cases that need no special flags.
class ServerAttacks : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new test::ServerProcess({"--http-body-timeout", "1"}); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static test::ServerProcess* server_;
  int port() const { return server_->port(); }
  // Engine steps so far: any request that reached the engine moves it.
  double engine_steps() const { return test::settled_metric(port(), "seam_steps_total"); }
};
test::ServerProcess* ServerAttacks::server_ = nullptr;

// Finding 2: with 2,000 idle connections and 300 slow-loris connections (a
// header byte every 250 ms), /health stays fast and a completion still runs;
// every slow connection is cut at the header deadline (1 s here).
TEST(ServerSlowClients, IdleAndSlowConnectionsDoNotStarveHealth) {
  rlimit r{};
  getrlimit(RLIMIT_NOFILE, &r);
  r.rlim_cur = r.rlim_max;
  setrlimit(RLIMIT_NOFILE, &r);
  ASSERT_GE(r.rlim_cur, 5000u) << "the test needs 2,300 sockets on each side";
  test::ServerProcess server({"--http-header-timeout", "1"});
  const int port = server.port();

  std::vector<RawSocket> idle, slow;
  for (int i = 0; i < 2000; ++i) idle.emplace_back(port);
  for (int i = 0; i < 300; ++i) slow.emplace_back(port);
  for (const auto& c : idle) ASSERT_TRUE(c.ok());
  const std::string header = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + std::string(60, 'a') + "\r\n\r\n";

  double worst = 0;
  size_t sent = 0;
  const auto t0 = Clock::now();
  while (since(t0) < 2.5) {
    for (auto& c : slow) c.send(std::string(1, header[sent % header.size()]));
    ++sent;
    int status = 0;
    worst = std::max(worst, test::health_seconds(port, &status));
    EXPECT_EQ(status, 200);
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  EXPECT_LT(worst, 0.5) << "GET /health took " << worst << " s under 2,300 idle and slow connections";

  HttpClient cli("127.0.0.1", port);
  cli.set_read_timeout(30);
  auto res = cli.Post("/v1/completions", k_small_request, "application/json");
  ASSERT_TRUE(res) << res.error();
  EXPECT_EQ(res->status, 200) << res->body;

  // 2.5 s of trickling is past the 1 s header deadline: each slow one got 408 and a close.
  size_t n_cut = 0;
  for (auto& c : slow) {
    const std::string got = c.read(2);
    n_cut += c.eof() && got.rfind("HTTP/1.1 408", 0) == 0;
  }
  EXPECT_EQ(n_cut, slow.size());
}

// Finding 4: a body shorter than its Content-Length, or without its final
// chunk, never reaches the engine; a stalled body gets 408 at the body
// deadline; a Content-Length over the limit gets 413 before any body is sent.
TEST_F(ServerAttacks, IncompleteBodiesNeverRun) {
  const double steps0 = engine_steps();
  ASSERT_GE(steps0, 0);
  const std::string body = k_small_request;
  {  // a whole JSON body, but Content-Length promises more; then the client leaves
    RawSocket c(port());
    c.send("POST /v1/completions HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(body.size() + 20) + "\r\n\r\n" + body);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    c.close();
  }
  {  // chunked without the final chunk; then the client leaves
    RawSocket c(port());
    char size[16];
    std::snprintf(size, sizeof size, "%zx", body.size());
    c.send("POST /v1/completions HTTP/1.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
           std::string(size) + "\r\n" + body + "\r\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    c.close();
  }
  {  // the client stays but never finishes: 408 at the 1 s body deadline
    RawSocket c(port());
    const auto t0 = Clock::now();
    c.send("POST /v1/completions HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(body.size() + 20) + "\r\n\r\n" + body);
    const std::string got = c.read(10);
    EXPECT_EQ(got.rfind("HTTP/1.1 408", 0), 0u) << got;
    EXPECT_TRUE(c.eof());
    EXPECT_LT(since(t0), 5.0);
  }
  {  // 413 from the Content-Length alone, with an OpenAI error body
    RawSocket c(port());
    c.send("POST /v1/completions HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n");
    const std::string got = c.read(5, "}}");
    EXPECT_EQ(got.rfind("HTTP/1.1 413", 0), 0u) << got;
    EXPECT_NE(got.find("\"error\""), std::string::npos) << got;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(engine_steps(), steps0) << "an incomplete request reached the engine";
  EXPECT_EQ(metric(test::metrics_page(port()), "seam_server_in_flight_requests"), 0);
}

// Finding 7: ten GETs in one write get ten answers, in order; POSTs too.
TEST_F(ServerAttacks, PipelinedRequestsAllGetAnswers) {
  RawSocket c(port());
  std::string burst;
  for (int i = 0; i < 10; ++i) burst += "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  ASSERT_TRUE(c.send(burst));
  std::string got;
  const auto t0 = Clock::now();
  while (count_of(got, "{\"status\":\"ok\"}") < 10 && since(t0) < 5) got += c.read(0.2);
  EXPECT_EQ(count_of(got, "HTTP/1.1 200 OK"), 10u) << got;

  // Three completions in one write: three whole JSON answers on the same connection.
  burst.clear();
  for (int i = 0; i < 3; ++i)
    burst += test::raw_post("/v1/completions", "{\"prompt\": \"Once upon a time\", \"max_tokens\": " +
                                                   std::to_string(i + 1) + ", \"temperature\": 0}");
  ASSERT_TRUE(c.send(burst));
  got.clear();
  while (count_of(got, "\"usage\"") < 3 && since(t0) < 20) got += c.read(0.2);
  EXPECT_EQ(count_of(got, "HTTP/1.1 200 OK"), 3u) << got;
  const size_t a = got.find("\"completion_tokens\":1"), b = got.find("\"completion_tokens\":2"),
               d = got.find("\"completion_tokens\":3");
  EXPECT_TRUE(a < b && b < d && d != std::string::npos) << got;
}

// Finding 8: header floods are refused with 431 and the server keeps serving.
TEST_F(ServerAttacks, HeaderFloodsGet431) {
  {
    std::string req = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    for (int i = 0; i < 1000; ++i) req += "X-" + std::to_string(i) + ": y\r\n";
    RawSocket c(port());
    c.send(req + "\r\n");
    const std::string got = c.read(5, "}}");
    EXPECT_EQ(got.rfind("HTTP/1.1 431", 0), 0u) << got.substr(0, 200);
  }
  {
    RawSocket c(port());
    c.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + std::string(1 << 20, 'a') + "\r\n\r\n");
    const std::string got = c.read(5, "}}");
    EXPECT_EQ(got.rfind("HTTP/1.1 431", 0), 0u) << got.substr(0, 200);
  }
  int status = 0;
  EXPECT_LT(test::health_seconds(port(), &status), 1.0);
  EXPECT_EQ(status, 200);
}

// Finding 11: HTTP/1.0 gets 1.0 without chunks; conflicting framing is 400;
// GET on a POST route is 405; range errors name their param; /metrics prints
// integers as integers; the default model id is the folder's name, and the
// absolute path appears in no error.
TEST_F(ServerAttacks, SmallerProtocolAndApiFindings) {
  {
    RawSocket c(port());
    c.send(test::raw_post("/v1/completions",
                          "{\"prompt\": \"Once upon a time\", \"max_tokens\": 4, \"stream\": true}", "", "HTTP/1.0"));
    const std::string got = c.read_to_eof(20);
    EXPECT_EQ(got.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << got;
    EXPECT_EQ(got.find("chunked"), std::string::npos) << got;
    EXPECT_NE(got.find("data: [DONE]\n\n"), std::string::npos) << got;
    EXPECT_TRUE(c.eof());
  }
  const double steps0 = engine_steps();
  for (const std::string& framing : {"Content-Length: 10\r\nTransfer-Encoding: chunked\r\n",
                                     "Transfer-Encoding: chunked\r\nContent-Length: 10\r\n"}) {
    RawSocket c(port());
    c.send("POST /v1/completions HTTP/1.1\r\nContent-Type: application/json\r\n" + framing + "\r\n" +
           "20\r\n" + k_small_request.substr(0, 32) + "\r\n0\r\n\r\n");
    const std::string got = c.read(5, "}}");
    EXPECT_EQ(got.rfind("HTTP/1.1 400", 0), 0u) << framing << " -> " << got;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(engine_steps(), steps0);

  HttpClient cli("127.0.0.1", port());
  cli.set_read_timeout(30);
  auto get = cli.Get("/v1/completions");
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 405) << get->body;
  EXPECT_EQ(get->get_header_value("Allow"), "POST");
  EXPECT_TRUE(json::parse(get->body, nullptr, false).contains("error")) << get->body;

  for (const std::string field :
       {"temperature", "top_p", "min_p", "frequency_penalty", "presence_penalty", "repetition_penalty"}) {
    auto res = cli.Post("/v1/completions", "{\"prompt\": \"x\", \"" + field + "\": -5}", "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << field << ": " << res->body;
    const json j = json::parse(res->body, nullptr, false);
    ASSERT_TRUE(j.contains("error")) << res->body;
    EXPECT_EQ(j["error"]["param"], field) << res->body;
  }

  ASSERT_EQ(cli.Post("/v1/completions", k_small_request, "application/json")->status, 200);
  const std::string page = test::metrics_page(port());
  const std::regex sample("\n[a-z_]+(\\{[^}]*\\})? ([^\n]*)");
  size_t n_samples = 0;
  for (auto it = std::sregex_iterator(page.begin(), page.end(), sample); it != std::sregex_iterator(); ++it) {
    ++n_samples;
    EXPECT_EQ((*it)[2].str().find("e+"), std::string::npos) << (*it)[0].str();
  }
  EXPECT_GT(n_samples, 50u);
  EXPECT_NE(page.find("\nseam_kv_pool_tokens 32768\n"), std::string::npos);

  auto models = cli.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(json::parse(models->body)["data"][0]["id"], "stories260K");
  auto wrong = cli.Post("/v1/completions", "{\"prompt\": \"x\", \"model\": \"gpt-4\"}", "application/json");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 404);
  EXPECT_EQ(wrong->body.find(test::stories_dir()), std::string::npos) << wrong->body;
  EXPECT_NE(wrong->body.find("stories260K"), std::string::npos) << wrong->body;
}

}  // namespace
}  // namespace seam
