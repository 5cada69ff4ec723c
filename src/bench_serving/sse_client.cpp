#include "bench_serving/sse_client.h"

#include "bench_serving/http_client.h"

#include "core/error.h"

namespace seam {

SseResponse post_sse(const HttpTarget& target, const std::string& path, const std::string& json_body,
                     const std::function<bool(const std::string&, std::chrono::steady_clock::time_point)>& on_event) {
  HttpClient cli(target.host, target.port);
  const long sec = long(target.timeout_s);
  const long usec = long((target.timeout_s - double(sec)) * 1e6);
  cli.set_connection_timeout(sec, usec);
  cli.set_read_timeout(sec, usec);
  cli.set_header("Accept", "text/event-stream");

  SseResponse out;
  std::string pending;  // bytes of an event not yet complete
  bool stopped = false;

  auto on_body = [&](const HttpReply& r, const char* data, size_t n) {
    const auto now = std::chrono::steady_clock::now();
    out.status = r.status;
    const bool is_stream = r.get_header_value("Content-Type").rfind("text/event-stream", 0) == 0;
    if (!is_stream || r.status != 200) {
      out.body.append(data, n);
      return true;
    }
    pending.append(data, n);
    size_t end;
    while ((end = pending.find("\n\n")) != std::string::npos) {
      const std::string event = pending.substr(0, end);
      pending.erase(0, end + 2);
      // An event is lines; the data lines carry the payload ("data: " or "data:").
      size_t pos = 0;
      while (pos < event.size()) {
        size_t eol = event.find('\n', pos);
        if (eol == std::string::npos) eol = event.size();
        std::string line = event.substr(pos, eol - pos);
        pos = eol + 1;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.rfind("data:", 0) != 0) continue;
        std::string payload = line.substr(5);
        if (!payload.empty() && payload[0] == ' ') payload.erase(0, 1);
        if (!on_event(payload, now)) {
          stopped = true;
          return false;
        }
      }
    }
    return true;
  };

  const HttpResult res = cli.send("POST", path, json_body, "application/json", on_body);
  if (stopped) return out;
  if (!res) {
    out.error = "HTTP request failed: " + res.error();
    return out;
  }
  if (out.status == 0) out.status = res->status;
  if (out.status != 200) out.error = out.body;
  return out;
}

HttpTarget parse_base_url(const std::string& url) {
  HttpTarget t;
  std::string rest = url;
  const std::string scheme = "http://";
  SEAM_CHECK(rest.rfind(scheme, 0) == 0, "--base-url: '", url, "' must start with http://");
  rest = rest.substr(scheme.size());
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  SEAM_CHECK(rest.find('/') == std::string::npos, "--base-url: '", url, "' must not have a path");
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos) {
    t.host = rest;
    t.port = 80;
  } else {
    t.host = rest.substr(0, colon);
    try {
      size_t used = 0;
      t.port = std::stoi(rest.substr(colon + 1), &used);
      SEAM_CHECK(used == rest.size() - colon - 1, "--base-url: bad port in '", url, "'");
    } catch (const std::logic_error&) {
      throw Error("--base-url: bad port in '" + url + "'");
    }
  }
  SEAM_CHECK(!t.host.empty(), "--base-url: no host in '", url, "'");
  return t;
}

}  // namespace seam
