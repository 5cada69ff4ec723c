// The --api-key check of the /v1/* routes: "Authorization: Bearer KEY".
#pragma once
#include <string>

namespace seam {

// True when `authorization` (the header's value) is "Bearer " + `key`. The
// comparison takes the same time wherever the first difference is (and for a
// wrong length), so the key cannot be guessed byte by byte from timings.
bool api_key_matches(const std::string& authorization, const std::string& key);

// The key from --api-key, else from the SEAM_API_KEY environment variable.
std::string resolve_api_key(const std::string& flag_value);

// Whether `host` binds only the loopback interface (127.0.0.0/8, ::1, localhost).
bool is_loopback_host(const std::string& host);

}  // namespace seam
