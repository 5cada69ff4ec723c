#include "api/error_kind.h"

namespace seam {

const char* error_kind_name(ErrorKind k) {
  switch (k) {
    case ErrorKind::none: return "none";
    case ErrorKind::invalid_request: return "invalid_request";
    case ErrorKind::not_found: return "not_found";
    case ErrorKind::overloaded: return "overloaded";
    case ErrorKind::internal: return "internal";
    case ErrorKind::engine_dead: return "engine_dead";
  }
  return "?";
}

int http_status(ErrorKind k) {
  switch (k) {
    case ErrorKind::none: return 200;
    case ErrorKind::invalid_request: return 400;
    case ErrorKind::not_found: return 404;
    case ErrorKind::overloaded: return 503;
    case ErrorKind::internal: return 500;
    case ErrorKind::engine_dead: return 500;
  }
  return 500;
}

RequestError engine_dead(const std::string& cause) {
  return RequestError(ErrorKind::engine_dead, "engine is dead: " + cause);
}

ErrorKind error_kind_of(const std::exception& e) {
  if (auto* r = dynamic_cast<const RequestError*>(&e)) return r->kind();
  if (dynamic_cast<const DeviceError*>(&e)) return ErrorKind::engine_dead;
  if (dynamic_cast<const InternalError*>(&e)) return ErrorKind::internal;
  if (dynamic_cast<const Error*>(&e)) return ErrorKind::invalid_request;
  return ErrorKind::internal;
}

}  // namespace seam
