// The HTTP request path under fuzzing: bytes from a client -> the requests
// they hold, through Boost.Beast's request parser with the limits the server
// sets. Until the Beast layer of issue 26 (src/http/) is merged this is a
// stand-in with those limits; the lead re-points parse_http_requests at the
// layer's own parse function (one place, here) once it exists.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace seam::fuzz {

struct HttpLimits {
  size_t header_bytes = 16 << 10;     // request line + headers
  size_t header_count = 100;          // fields per request
  uint64_t body_bytes = 64ull << 20;  // beyond: 413
};

struct HttpRequestSeen {
  std::string method, target;
  unsigned version = 11;  // 10 or 11
  bool keep_alive = false;
  size_t n_fields = 0;
  size_t body_size = 0;
};

struct HttpParseOutcome {
  std::vector<HttpRequestSeen> requests;  // complete requests, in order (pipelining)
  bool incomplete = false;                // the bytes end inside a request
  std::string error;                      // why parsing stopped (empty: it did not)
};

// Parses every request in `bytes`, one after the other, as a keep-alive
// connection would; stops at the first error (the connection is then closed).
HttpParseOutcome parse_http_requests(std::string_view bytes, const HttpLimits& limits = {});

}  // namespace seam::fuzz
