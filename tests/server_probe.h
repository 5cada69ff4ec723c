// Helpers of the server hardening tests: raw request text, /metrics samples,
// and a timed /health probe.
#pragma once
#include <chrono>
#include <string>
#include <thread>

#include "bench_serving/http_client.h"

namespace seam::test {

// A POST with a JSON body as raw bytes; `extra` is more header lines ("K: V\r\n").
inline std::string raw_post(const std::string& path, const std::string& body, const std::string& extra = "",
                            const std::string& version = "HTTP/1.1") {
  return "POST " + path + " " + version + "\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n" + extra + "\r\n" + body;
}

inline std::string metrics_page(int port) {
  HttpClient cli("127.0.0.1", port);
  cli.set_read_timeout(10);
  auto res = cli.Get("/metrics");
  return res && res->status == 200 ? "\n" + res->body : "";
}

// The value of the sample line "name value" (name with its labels); -1 when absent.
inline double metric(const std::string& page, const std::string& name) {
  const size_t pos = page.find("\n" + name + " ");
  if (pos == std::string::npos) return -1;
  return std::stod(page.substr(pos + name.size() + 2));
}

// A metric once it holds still for 100 ms: engine stats are published after a
// step's callbacks, so a client may have its answer before the counters move.
inline double settled_metric(int port, const std::string& name) {
  double last = metric(metrics_page(port), name);
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const double now = metric(metrics_page(port), name);
    if (now == last) return now;
    last = now;
  }
}

// Seconds a GET /health takes on a fresh connection; a large value when it fails.
inline double health_seconds(int port, int* status = nullptr) {
  const auto t0 = std::chrono::steady_clock::now();
  HttpClient cli("127.0.0.1", port);
  cli.set_connection_timeout(20);
  cli.set_read_timeout(20);
  auto res = cli.Get("/health");
  if (status) *status = res ? res->status : 0;
  if (!res) return 1e9;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace seam::test
