// The request JSON -> engine-request parsers: parse_api_request (the server's
// /v1/completions and /v1/chat/completions bodies) and the --prompts-file
// line reader. The only exception either may throw is its error type
// (ApiError 4xx / seam::Error), and no message may carry nlohmann's tags:
// anything else is what the server would turn into an HTTP 500.
#include <cstdint>
#include <string>

#include "cli/request_json.h"
#include "core/json_parse.h"
#include "fuzz_util.h"
#include "server/api_error.h"
#include "server/openai_request.h"

namespace {
size_t count(std::string_view s, std::string_view needle) {
  size_t n = 0;
  for (size_t p = s.find(needle); p != std::string_view::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}
// The library's tag appears in a message more often than the client wrote it.
bool leaks_tag(const std::string& message, const std::string& input) {
  return count(message, "[json.exception.") > count(input, "[json.exception.");
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace seam;
  if (size == 0) return 0;
  // The first byte picks the route; the rest is the body.
  const ApiKind kind = data[0] & 1 ? ApiKind::chat : ApiKind::completion;
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    const ApiRequest r = parse_api_request(body, kind);
    if (r.n < 1 || r.n > k_max_n) fuzz::finding("n out of range", body.c_str());
    if (kind == ApiKind::completion && r.prompts.empty()) fuzz::finding("no prompts", body.c_str());
    if (kind == ApiKind::chat && r.messages.empty()) fuzz::finding("no messages", body.c_str());
  } catch (const ApiError& e) {
    if (e.status() < 400 || e.status() >= 500) fuzz::finding("non-4xx for client input", e.what());
    if (leaks_tag(e.what(), body)) fuzz::finding("parser internals", e.what());
    if (std::string_view(e.what()).size() > 1024) fuzz::finding("error text echoes the body at length", "");
  } catch (const std::exception& e) {
    fuzz::finding("parse_api_request threw a non-ApiError", e.what());
  }
  try {
    (void)cli::parse_request_line(body, SamplingParams{}, "line");
  } catch (const Error& e) {
    if (leaks_tag(e.what(), body)) fuzz::finding("parser internals", e.what());
  } catch (const std::exception& e) {
    fuzz::finding("parse_request_line threw a non-seam::Error", e.what());
  }
  return 0;
}
