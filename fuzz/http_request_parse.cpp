#include "http_request_parse.h"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstdio>
#include <cstdlib>
#include <string_view>

// BOOST_ENABLE_ASSERT_HANDLER (fuzz/CMakeLists.txt): Beast's assertions stay
// on under fuzzing, and report here.
namespace boost {
void assertion_failed(char const* expr, char const* function, char const* file, long line) {
  // Boost 1.74 (Debian 12) asserts n >= 5 in basic_parser::parse_chunk_header
  // when a final chunk arrives in short pieces; the code after it is right
  // (it asks for more input). Found by this fuzzer; the assertion was fixed
  // upstream (boostorg/beast#2861). Release builds (NDEBUG) never check it.
  if (std::string_view(expr) == "n >= 5" && std::string_view(file).ends_with("basic_parser.ipp")) return;
  std::fprintf(stderr, "%s:%ld: %s: assertion '%s' failed\n", file, line, function, expr);
  std::abort();
}
void assertion_failed_msg(char const* expr, char const* msg, char const* function, char const* file, long line) {
  std::fprintf(stderr, "%s:%ld: %s: assertion '%s' failed: %s\n", file, line, function, expr, msg);
  std::abort();
}
}  // namespace boost

namespace seam::fuzz {

namespace http = boost::beast::http;

HttpParseOutcome parse_http_requests(std::string_view bytes, const HttpLimits& limits) {
  HttpParseOutcome out;
  size_t pos = 0;
  while (pos < bytes.size()) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(limits.header_bytes));
    parser.body_limit(limits.body_bytes);
    parser.eager(true);
    boost::beast::error_code ec;
    // Feed as a socket would: in pieces, so the parser's need_more path runs.
    while (!parser.is_done() && pos < bytes.size()) {
      const size_t n = parser.put(boost::asio::buffer(bytes.data() + pos, bytes.size() - pos), ec);
      pos += n;
      if (ec == http::error::need_more) {
        ec = {};
        if (n == 0) break;  // the rest is an incomplete piece
        continue;
      }
      if (ec) break;
    }
    if (ec) {
      out.error = ec.message();
      return out;
    }
    if (!parser.is_done()) {
      out.incomplete = true;
      return out;
    }
    const auto& msg = parser.get();
    HttpRequestSeen seen;
    seen.method = std::string(msg.method_string());
    seen.target = std::string(msg.target());
    seen.version = msg.version();
    seen.keep_alive = msg.keep_alive();
    for (auto it = msg.begin(); it != msg.end(); ++it) ++seen.n_fields;
    seen.body_size = msg.body().size();
    if (seen.n_fields > limits.header_count) {
      out.error = "too many header fields";
      return out;
    }
    out.requests.push_back(std::move(seen));
    if (!out.requests.back().keep_alive) break;  // the connection closes after it
  }
  return out;
}

}  // namespace seam::fuzz
