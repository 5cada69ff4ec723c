#include "server/api_key.h"

#include <cstdlib>

namespace seam {

bool api_key_matches(const std::string& authorization, const std::string& key) {
  const std::string prefix = "Bearer ";
  const std::string expected = prefix + key;
  // Every byte of the expected value is compared, whatever was sent; a length
  // difference counts as a difference without an early return.
  unsigned diff = authorization.size() == expected.size() ? 0u : 1u;
  for (size_t i = 0; i < expected.size(); ++i) {
    const unsigned char sent = i < authorization.size() ? (unsigned char)authorization[i] : 0u;
    diff |= unsigned(sent ^ (unsigned char)expected[i]);
  }
  return diff == 0 && !key.empty();
}

std::string resolve_api_key(const std::string& flag_value) {
  if (!flag_value.empty()) return flag_value;
  const char* env = std::getenv("SEAM_API_KEY");
  return env ? std::string(env) : std::string();
}

bool is_loopback_host(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace seam
