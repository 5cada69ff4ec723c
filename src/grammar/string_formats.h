// JSON Schema string formats the engine enforces, as regular expressions
// (RFC 3339 date / time / date-time with real month lengths and leap years,
// duration, email as dot-atom@domain, uuid, ipv4, ipv6, hostname (RFC 1123,
// its total length kept by the labels' shape), uri and uri-reference
// (RFC 3986)). Others are an error.
#pragma once
#include <string>

namespace seam::grammar {

// The regex for a format (anchored, over the decoded string), or "" when unsupported.
std::string string_format_regex(const std::string& format);

}  // namespace seam::grammar
