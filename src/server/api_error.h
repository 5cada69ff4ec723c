// ApiError: a request the server refuses, with its HTTP status and the fields of
// an OpenAI error body {"error": {"message", "type", "param", "code"}}; a 503
// also carries the Retry-After seconds. from_exception maps the engine's error
// kinds (api/error_kind.h) to it.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "api/error_kind.h"
#include "core/error.h"

namespace seam {

class ApiError : public Error {
 public:
  ApiError(int status, std::string message, std::string param = "", std::string type = "", std::string code = "")
      : Error(message), status_(status), param_(std::move(param)), type_(std::move(type)), code_(std::move(code)) {
    if (type_.empty()) type_ = default_type(status_);
  }
  int status() const { return status_; }
  int retry_after_s() const { return retry_after_s_; }  // > 0: send a Retry-After header
  ApiError& with_retry_after(int seconds) {
    retry_after_s_ = seconds;
    return *this;
  }
  const std::string& param() const { return param_; }
  const std::string& type() const { return type_; }
  const std::string& code() const { return code_; }

  nlohmann::json body() const { return error_body(what(), type_, param_, code_); }

  static nlohmann::json error_body(const std::string& message, const std::string& type, const std::string& param,
                                   const std::string& code) {
    nlohmann::json e;
    e["message"] = message;
    e["type"] = type;
    e["param"] = param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param);
    e["code"] = code.empty() ? nlohmann::json(nullptr) : nlohmann::json(code);
    return nlohmann::json{{"error", e}};
  }

  static const char* default_type(int status) {
    if (status == 404) return "not_found_error";
    if (status == 429 || status == 503) return "server_overloaded";
    if (status >= 500) return "internal_server_error";
    return "invalid_request_error";
  }

 private:
  int status_;
  int retry_after_s_ = 0;
  std::string param_;
  std::string type_;
  std::string code_;
};

// Any exception as the client sees it: its kind's status (400 / 404 / 503 with
// Retry-After / 500), the RequestError's param, and for engine_dead the
// "engine is dead: <cause>" message.
inline ApiError from_exception(const std::exception& e) {
  if (auto* a = dynamic_cast<const ApiError*>(&e)) return *a;
  const ErrorKind kind = error_kind_of(e);
  auto* r = dynamic_cast<const RequestError*>(&e);
  std::string message = e.what();
  if (kind == ErrorKind::engine_dead && !r) message = engine_dead(message).what();
  if (kind == ErrorKind::internal) message = "internal error: " + message;
  ApiError out(http_status(kind), message, r ? r->param() : "", "",
               kind == ErrorKind::overloaded ? "server_overloaded" : "");
  if (kind == ErrorKind::overloaded) out.with_retry_after(r && r->retry_after_s() > 0 ? r->retry_after_s() : 1);
  return out;
}

// 400 naming the offending field.
inline ApiError bad_request(const std::string& message, const std::string& param = "") {
  return ApiError(400, message, param);
}

}  // namespace seam
