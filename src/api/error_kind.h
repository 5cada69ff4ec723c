// Error kinds: what a failed request means to its client, and so its HTTP
// status. Every exception the engine throws at a caller, or reports in a
// RequestOutput, is one of these:
//   invalid_request  400  the request can never be served as given (names its field)
//   not_found        404  e.g. an unknown model name
//   overloaded       503  the queue is full now; retry after retry_after_s
//   internal         500  a broken invariant (a bug); the engine goes on
//   engine_dead      500  a device fault: the engine stopped for good (as vLLM's
//                         EngineDeadError); every in-flight and later request
//                         fails with "engine is dead: <cause>"
#pragma once
#include <exception>
#include <string>

#include "core/error.h"

namespace seam {

enum class ErrorKind { none, invalid_request, not_found, overloaded, internal, engine_dead };

const char* error_kind_name(ErrorKind k);
int http_status(ErrorKind k);

// An error with its kind; `param` names the offending request field (engine
// names: "prompt", "max_new_tokens", "top_p", "n", ...), empty when none.
class RequestError : public Error {
 public:
  RequestError(ErrorKind kind, const std::string& message, std::string param = "", int retry_after_s = 0)
      : Error(message), kind_(kind), param_(std::move(param)), retry_after_s_(retry_after_s) {}
  ErrorKind kind() const { return kind_; }
  const std::string& param() const { return param_; }
  int retry_after_s() const { return retry_after_s_; }  // overloaded only

 private:
  ErrorKind kind_;
  std::string param_;
  int retry_after_s_;
};

inline RequestError invalid_request(const std::string& message, const std::string& param = "") {
  return RequestError(ErrorKind::invalid_request, message, param);
}
inline RequestError overloaded(const std::string& message, int retry_after_s = 1) {
  return RequestError(ErrorKind::overloaded, message, "", retry_after_s);
}
// "engine is dead: <cause>"
RequestError engine_dead(const std::string& cause);

// The kind of any exception: a RequestError's own; DeviceError -> engine_dead;
// InternalError -> internal; any other seam::Error (bad input found deeper,
// e.g. by the tokenizer) -> invalid_request; anything else -> internal.
ErrorKind error_kind_of(const std::exception& e);

}  // namespace seam
