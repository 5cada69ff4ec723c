// The HTTP request path: any client bytes parse into complete requests, an
// incomplete tail, or an error -- never a crash -- and what is parsed keeps
// the limits (header size, body size) and the consumed-bytes invariants.
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "http_request_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace seam::fuzz;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  HttpLimits limits;
  limits.header_bytes = 4096;  // small limits, so the fuzzer reaches them
  limits.body_bytes = 1024;
  const HttpParseOutcome out = parse_http_requests(bytes, limits);
  size_t body_total = 0;
  for (const HttpRequestSeen& r : out.requests) {
    if (r.body_size > limits.body_bytes) finding("body over the limit accepted", r.target.c_str());
    if (r.version != 10 && r.version != 11) finding("version other than 1.0/1.1 accepted", r.target.c_str());
    if (r.method.empty() || r.target.empty()) finding("empty method or target accepted", r.method.c_str());
    body_total += r.body_size;
  }
  if (body_total > size) finding("more body bytes than input", "");
  return 0;
}
