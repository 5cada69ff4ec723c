// A blocking HTTP POST that reads a server-sent-events response as it
// arrives, calling back once per "data: ..." event with its arrival time.
// Used by `seam bench-serving` (one call per in-flight request, on its own
// thread) and by the server tests.
#pragma once
#include <chrono>
#include <functional>
#include <string>

namespace seam {

struct SseResponse {
  int status = 0;          // HTTP status; 0 when no response came
  std::string error;       // transport error, or the body of a non-200 response
  std::string body;        // the raw body when the response was not an event stream
};

struct HttpTarget {
  std::string host = "127.0.0.1";
  int port = 30000;
  double timeout_s = 600;  // connect / read / write
};

// `on_event` gets the text after "data: " of each event and when it arrived;
// returning false closes the connection (the client walks away mid-stream).
SseResponse post_sse(const HttpTarget& target, const std::string& path, const std::string& json_body,
                     const std::function<bool(const std::string& data, std::chrono::steady_clock::time_point t)>&
                         on_event);

// Parses "http://host:port" (no path); throws seam::Error otherwise.
HttpTarget parse_base_url(const std::string& url);

}  // namespace seam
