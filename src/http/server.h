// http::Server: an event-driven HTTP/1.1 server on Boost.Beast over Asio.
//
// Threads: a small fixed pool (Options::n_io_threads) runs one io_context;
// every connection is a strand on it and costs no thread, so thousands of idle
// or slow connections do not delay a /health probe. Handlers run on the io
// threads and must not block; they answer through their Responder, which
// posts back to the connection's strand from any thread.
//
// Per connection: deadlines for the whole header (from its first byte) and for
// the whole body, a keep-alive idle timeout, a write timeout, limits on header
// size and count (431) and on body size (413, from Content-Length before the
// body is read). Requests are answered in order on a connection (pipelining);
// HTTP/1.0 is answered as 1.0. A request runs only once its body is complete:
// a body cut short by EOF or its deadline is never handed to a handler. While a
// request runs, the connection keeps reading: EOF or an error from the client
// cancels the request (Responder::set_on_cancel), as does a failed write.
//
// Shutdown in steps: stop_accepting(); close_idle_connections() (idle, slow and
// half-sent requests are dropped; running ones close after their reply);
// wait for n_active_requests() to reach 0 as long as wanted; stop().
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "http/message.h"
#include "http/options.h"
#include "http/responder.h"
#include "http/router.h"

namespace seam::http {

// The body of a reply the server itself makes (404, 405, 413, 431, ...).
using ErrorBody = std::function<Response(int status, const std::string& message)>;

class Server {
 public:
  explicit Server(Options options);
  ~Server();  // stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Before start().
  void route(const std::string& method, const std::string& path, Handler handler);
  void set_error_body(ErrorBody error_body);

  // Binds host:port (throws seam::Error when it cannot) and starts the io threads.
  void start();
  int port() const;

  // Runs `fn` on a worker thread (Options::n_worker_threads): for handler work
  // that takes CPU time (parsing a large body, tokenizing), so that it never
  // holds an io thread. After stop(), `fn` is dropped.
  void post_work(std::function<void()> fn);

  void stop_accepting();
  void close_idle_connections();
  size_t n_active_requests() const;  // dispatched and not yet fully answered
  size_t n_connections() const;
  // Closes every connection (running requests are cancelled) and joins the io
  // threads. Idempotent.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace seam::http
