// JSON Schema string formats the engine enforces, as regular expressions
// (RFC 3339 date / time / date-time with real month lengths and leap years,
// email as dot-atom@domain, uuid, ipv4). Others are an error.
#pragma once
#include <string>

namespace seam::grammar {

// The regex for a format (anchored, over the decoded string), or "" when unsupported.
std::string string_format_regex(const std::string& format);

}  // namespace seam::grammar
