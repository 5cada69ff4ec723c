// http::Responder: the reply side of one request, handed to its handler. Every
// method is thread-safe and returns at once: it posts to the connection's
// strand, so an engine callback may call write() without blocking on the
// socket, and a handler may answer long after it returned (it keeps the
// shared_ptr). Exactly one of send() or start_stream() ... finish() per request;
// calls after the first reply, or after the connection closed, are ignored.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "http/message.h"

namespace seam::http {

class Responder {
 public:
  virtual ~Responder() = default;

  // A whole response (Content-Length framing).
  virtual void send(Response response) = 0;

  // A streamed response: chunked on HTTP/1.1; on HTTP/1.0 unframed, and the
  // connection closes after finish() (close-delimited).
  virtual void start_stream(int status, std::string content_type, std::vector<Header> headers = {}) = 0;
  virtual void write(std::string data) = 0;
  virtual void finish() = 0;

  // `on_cancel` runs once, on the connection's strand, when the client goes
  // away before the reply is complete (read EOF or error, failed or stalled
  // write) or the server drops the connection. Set it before the work it must
  // stop is started; set after the cancel, it runs at once (posted).
  virtual void set_on_cancel(std::function<void()> on_cancel) = 0;
  virtual bool cancelled() const = 0;

  // Runs `fn` on the connection's strand (serialized with this request's I/O).
  virtual void post(std::function<void()> fn) = 0;
};

}  // namespace seam::http
