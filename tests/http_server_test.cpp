// http::Server on its own (no engine): framing, pipelining, HTTP/1.0, limits,
// deadlines, cancellation when the client goes away, and shutdown, driven by
// raw sockets. Deadlines are set short so that each case takes well under a second.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "http/server.h"
#include "raw_socket.h"

namespace seam {
namespace {

using test::count_of;
using test::RawSocket;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A server with a few routes that record what ran.
struct TestServer {
  explicit TestServer(http::Options o = fast_options()) : server(o) {
    server.route("GET", "/echo", [this](http::Request& req, const std::shared_ptr<http::Responder>& res) {
      res->send(http::Response(200, "text/plain", req.target));
    });
    server.route("POST", "/echo", [this](http::Request& req, const std::shared_ptr<http::Responder>& res) {
      ++n_posts;
      res->send(http::Response(200, "text/plain", req.body));
    });
    // Streams `n` chunks from another thread, one every 5 ms; records a cancel.
    server.route("GET", "/stream", [this](http::Request&, const std::shared_ptr<http::Responder>& res) {
      res->set_on_cancel([this] { ++n_cancelled; });
      res->start_stream(200, "text/event-stream");
      std::lock_guard<std::mutex> lock(mu);
      workers.emplace_back([res, this] {
        for (int i = 0; i < 400 && !res->cancelled(); ++i) {
          res->write("data: " + std::to_string(i) + "\n\n");
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        res->finish();
      });
    });
    server.route("GET", "/short-stream", [](http::Request&, const std::shared_ptr<http::Responder>& res) {
      res->start_stream(200, "text/event-stream");
      res->write("data: a\n\n");
      res->write("data: b\n\n");
      res->finish();
    });
    // Never answers by itself (a long engine request); answers "late" once released.
    server.route("GET", "/hold", [this](http::Request&, const std::shared_ptr<http::Responder>& res) {
      res->set_on_cancel([this] { ++n_cancelled; });
      std::lock_guard<std::mutex> lock(mu);
      held.push_back(res);
    });
    server.start();
  }
  ~TestServer() {
    server.stop();
    for (auto& t : workers) t.join();
  }
  static http::Options fast_options() {
    http::Options o;
    o.header_timeout_s = 0.5;
    o.body_timeout_s = 0.5;
    o.keep_alive_timeout_s = 0.5;
    o.max_header_bytes = 4096;
    o.max_header_count = 20;
    o.max_body_bytes = 1000;
    return o;
  }
  int port() const { return server.port(); }
  void release_held() {
    std::lock_guard<std::mutex> lock(mu);
    for (auto& r : held) r->send(http::Response(200, "text/plain", "late"));
    held.clear();
  }

  http::Server server;
  std::atomic<int> n_posts{0}, n_cancelled{0};
  std::mutex mu;
  std::vector<std::thread> workers;
  std::vector<std::shared_ptr<http::Responder>> held;
};

std::string post(const std::string& body, const std::string& extra = "") {
  return "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extra +
         "\r\n" + body;
}

TEST(HttpServer, PipelinedRequestsAreAnsweredInOrder) {
  TestServer s;
  RawSocket c(s.port());
  std::string burst;
  for (int i = 0; i < 10; ++i) burst += "GET /echo?i=" + std::to_string(i) + " HTTP/1.1\r\nHost: x\r\n\r\n";
  burst += post("last");
  ASSERT_TRUE(c.send(burst));
  const std::string got = c.read(5, "last");
  EXPECT_EQ(count_of(got, "HTTP/1.1 200 OK"), 11u) << got;
  size_t at = 0;
  for (int i = 0; i < 10; ++i) {
    const size_t p = got.find("/echo?i=" + std::to_string(i), at);
    ASSERT_NE(p, std::string::npos) << i << ": " << got;
    at = p;
  }
  EXPECT_FALSE(c.eof());  // kept alive
}

TEST(HttpServer, Http10IsAnsweredAs10WithoutChunks) {
  TestServer s;
  {
    RawSocket c(s.port());
    c.send("GET /echo HTTP/1.0\r\n\r\n");
    const std::string got = c.read_to_eof(5);
    EXPECT_EQ(got.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << got;
    EXPECT_NE(got.find("Content-Length: 5\r\n"), std::string::npos) << got;
    EXPECT_TRUE(c.eof());  // 1.0 without keep-alive: closed
  }
  {
    RawSocket c(s.port());
    c.send("GET /short-stream HTTP/1.0\r\n\r\n");
    const std::string got = c.read_to_eof(5);
    EXPECT_EQ(got.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << got;
    EXPECT_EQ(got.find("chunked"), std::string::npos) << got;
    EXPECT_EQ(got.substr(got.find("\r\n\r\n") + 4), "data: a\n\ndata: b\n\n");  // close-delimited
    EXPECT_TRUE(c.eof());
  }
  {  // 1.1 streams are chunked
    RawSocket c(s.port());
    c.send("GET /short-stream HTTP/1.1\r\n\r\n");
    const std::string got = c.read(5, "0\r\n\r\n");
    EXPECT_NE(got.find("Transfer-Encoding: chunked\r\n"), std::string::npos) << got;
    EXPECT_NE(got.find("9\r\ndata: a\n\n\r\n"), std::string::npos) << got;
  }
}

TEST(HttpServer, BadFramingIsRefusedAndNeverRun) {
  TestServer s;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"POST /echo HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n0\r\n\r\n", "400"},
      {"POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n4\r\nabcd\r\n0\r\n\r\n", "400"},
      {"POST /echo HTTP/1.1\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcde", "400"},
      {"POST /echo HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\nabcd", "400"},
      {"POST /echo HTTP/1.1\r\n\r\nabcd", "411"},
      {"GARBAGE\r\n\r\n", "400"},
  };
  for (const auto& [req, status] : cases) {
    RawSocket c(s.port());
    c.send(req);
    const std::string got = c.read_to_eof(5);
    EXPECT_EQ(got.rfind("HTTP/1.1 " + status, 0), 0u) << req << " -> " << got;
    EXPECT_TRUE(c.eof()) << req;
  }
  EXPECT_EQ(s.n_posts.load(), 0);
}

TEST(HttpServer, HeaderAndBodyLimits) {
  TestServer s;
  {
    std::string req = "GET /echo HTTP/1.1\r\n";
    for (int i = 0; i < 21; ++i) req += "X-" + std::to_string(i) + ": y\r\n";
    RawSocket c(s.port());
    c.send(req + "\r\n");
    EXPECT_EQ(c.read_to_eof(5).rfind("HTTP/1.1 431", 0), 0u);
  }
  {
    RawSocket c(s.port());
    c.send("GET /echo HTTP/1.1\r\nX-Big: " + std::string(5000, 'a') + "\r\n\r\n");
    EXPECT_EQ(c.read_to_eof(5).rfind("HTTP/1.1 431", 0), 0u);
  }
  {  // 413 from Content-Length alone: the body is never sent
    RawSocket c(s.port());
    const auto t0 = Clock::now();
    c.send("POST /echo HTTP/1.1\r\nContent-Length: 1001\r\n\r\n");
    EXPECT_EQ(c.read(5, "\r\n\r\n").rfind("HTTP/1.1 413", 0), 0u);
    EXPECT_LT(since(t0), 0.4);  // not after a body deadline
  }
  {  // a chunked body over the limit
    RawSocket c(s.port());
    c.send("POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3e9\r\n" + std::string(1001, 'a') + "\r\n0\r\n\r\n");
    EXPECT_EQ(c.read_to_eof(5).rfind("HTTP/1.1 413", 0), 0u);
  }
  {  // exactly at the limit is fine
    RawSocket c(s.port());
    c.send(post(std::string(1000, 'b')));
    EXPECT_EQ(c.read(5, std::string(1000, 'b')).rfind("HTTP/1.1 200", 0), 0u);
  }
  EXPECT_EQ(s.n_posts.load(), 1);
}

TEST(HttpServer, IncompleteBodiesNeverRun) {
  TestServer s;
  {  // Content-Length larger than what is sent, then EOF
    RawSocket c(s.port());
    c.send("POST /echo HTTP/1.1\r\nContent-Length: 100\r\n\r\nhalf");
    c.close();
  }
  {  // the final chunk never comes, then EOF
    RawSocket c(s.port());
    c.send("POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    c.close();
  }
  {  // the client stalls mid-body: 408 at the body deadline, and the request never runs
    RawSocket c(s.port());
    const auto t0 = Clock::now();
    c.send("POST /echo HTTP/1.1\r\nContent-Length: 100\r\n\r\nhalf");
    const std::string got = c.read_to_eof(5);
    EXPECT_EQ(got.rfind("HTTP/1.1 408", 0), 0u) << got;
    EXPECT_GE(since(t0), 0.4);
    EXPECT_LT(since(t0), 2.0);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(s.n_posts.load(), 0);
  EXPECT_EQ(s.server.n_active_requests(), 0u);
}

TEST(HttpServer, SlowHeadersAreCutAtTheHeaderDeadlineWhileOthersAreServed) {
  TestServer s;
  // 200 slow-loris connections: one header byte every 100 ms.
  std::vector<RawSocket> slow;
  for (int i = 0; i < 200; ++i) slow.emplace_back(s.port());
  const std::string req = "GET /echo HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
  const auto t0 = Clock::now();
  double worst_fast = 0;
  size_t i = 0;
  while (since(t0) < 1.2) {
    for (auto& c : slow) c.send(std::string(1, req[i % req.size()]));
    ++i;
    const auto t = Clock::now();
    RawSocket fast(s.port());
    fast.send("GET /echo HTTP/1.1\r\n\r\n");
    EXPECT_EQ(fast.read(2, "/echo").rfind("HTTP/1.1 200", 0), 0u);
    worst_fast = std::max(worst_fast, since(t));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_LT(worst_fast, 0.5);
  // Past the 0.5 s header deadline every slow connection got 408 and was closed.
  size_t n_closed = 0;
  for (auto& c : slow) {
    const std::string got = c.read(1);
    n_closed += c.eof() && got.rfind("HTTP/1.1 408", 0) == 0;
  }
  EXPECT_EQ(n_closed, slow.size());
}

TEST(HttpServer, IdleKeepAliveConnectionsClose) {
  TestServer s;
  RawSocket c(s.port());
  c.send("GET /echo HTTP/1.1\r\n\r\n");
  EXPECT_EQ(c.read(2, "/echo").rfind("HTTP/1.1 200", 0), 0u);
  const auto t0 = Clock::now();
  EXPECT_TRUE(c.closed_within(3));
  EXPECT_GE(since(t0), 0.4);
  RawSocket never(s.port());  // connects and never sends: the header deadline closes it
  EXPECT_TRUE(never.closed_within(3));
}

TEST(HttpServer, UnknownPathIs404AndWrongMethodIs405WithAllow) {
  TestServer s;
  RawSocket c(s.port());
  c.send("GET /nothing HTTP/1.1\r\n\r\nDELETE /echo HTTP/1.1\r\n\r\n");
  const std::string got = c.read(5, "Allow");
  EXPECT_EQ(got.rfind("HTTP/1.1 404", 0), 0u) << got;
  EXPECT_NE(got.find("HTTP/1.1 405 Method Not Allowed\r\n"), std::string::npos) << got;
  EXPECT_NE(got.find("Allow: GET, POST\r\n"), std::string::npos) << got;
}

TEST(HttpServer, ClientGoneCancelsStreamedAndWholeRequests) {
  TestServer s;
  {
    RawSocket c(s.port());
    c.send("GET /stream HTTP/1.1\r\n\r\n");
    EXPECT_NE(c.read(2, "data: 3").find("data: 3"), std::string::npos);
    c.close();
  }
  {
    RawSocket c(s.port());
    c.send("GET /hold HTTP/1.1\r\n\r\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    c.reset();
  }
  const auto t0 = Clock::now();
  while (s.n_cancelled.load() < 2 && since(t0) < 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(s.n_cancelled.load(), 2);
  EXPECT_LT(since(t0), 1.0);
  s.release_held();  // a late reply to a closed connection goes nowhere, harmlessly
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(s.server.n_active_requests(), 0u);
}

TEST(HttpServer, ShutdownDrainsIdleAndLetsRunningRequestsFinish) {
  auto s = std::make_unique<TestServer>();
  RawSocket idle(s->port());
  idle.send("GET /echo HTTP/1.1\r\n\r\n");
  idle.read(2, "/echo");
  RawSocket half(s->port());
  half.send("POST /echo HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc");
  RawSocket running(s->port());
  running.send("GET /hold HTTP/1.1\r\n\r\n");
  // Running: its handler has it (n_active alone might still count idle's reply).
  auto n_held = [&] {
    std::lock_guard<std::mutex> lock(s->mu);
    return s->held.size();
  };
  const auto t0 = Clock::now();
  while (n_held() < 1 && since(t0) < 2) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_EQ(n_held(), 1u);
  while (s->server.n_active_requests() > 1 && since(t0) < 2) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_EQ(s->server.n_active_requests(), 1u);

  s->server.stop_accepting();
  s->server.close_idle_connections();
  EXPECT_TRUE(idle.closed_within(1));
  EXPECT_TRUE(half.closed_within(1));
  EXPECT_FALSE(running.closed_within(0.2));  // still running
  RawSocket late(s->port());
  EXPECT_TRUE(!late.ok() || late.closed_within(1));  // not accepted
  s->release_held();
  const std::string got = running.read_to_eof(2);
  EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got;
  EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
  EXPECT_TRUE(running.eof());
  EXPECT_EQ(s->server.n_active_requests(), 0u);
  EXPECT_EQ(s->n_posts.load(), 0);
  s.reset();  // stop() with nothing left
}

}  // namespace
}  // namespace seam
