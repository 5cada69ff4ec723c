// Errors: exceptions that carry a one-line, user-facing message.
// Bad input (model folder, request, flags) throws seam::Error; the CLI prints
// the message and exits non-zero, the server turns it into an HTTP 4xx.
// Two kinds are told apart because they mean something else to a server:
//   InternalError -- a broken invariant (a bug): HTTP 500, the engine goes on;
//   DeviceError   -- the device failed (a CUDA / cuBLAS error, an injected
//                    fault): fatal, the engine stops (api/error_kind.h).
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace seam {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

// SEAM_ASSERT failed: the code is wrong, not the input.
class InternalError : public Error {
 public:
  using Error::Error;
};

// The device failed. A CUDA error is sticky (every later call fails too), so
// whoever catches this must stop using the device.
class DeviceError : public Error {
 public:
  using Error::Error;
};

namespace detail {
template <typename... Args>
std::string concat(Args&&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

// SEAM_CHECK(cond, parts...): throws seam::Error with the concatenated parts.
#define SEAM_CHECK(cond, ...)                                       \
  do {                                                              \
    if (!(cond)) throw ::seam::Error(::seam::detail::concat(__VA_ARGS__)); \
  } while (0)

// SEAM_ASSERT: an internal invariant (a bug if it fails), with file and line;
// throws seam::InternalError.
#define SEAM_ASSERT(cond, ...)                                                    \
  do {                                                                            \
    if (!(cond))                                                                  \
      throw ::seam::InternalError(::seam::detail::concat(__FILE__, ":", __LINE__, \
                                                 ": internal invariant '", #cond, \
                                                 "' failed. ", ##__VA_ARGS__));   \
  } while (0)

}  // namespace seam
