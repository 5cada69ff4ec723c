// HttpServer: the OpenAI-compatible HTTP front end of `seam serve`.
//
//   POST /v1/completions, /v1/chat/completions   (streamed or not)
//   GET  /v1/models, /health, /metrics
//   POST /tokenize, /detokenize                  (vLLM's shapes; tokenize_route.h)
//
// On http::Server (Boost.Beast, event-driven): connections cost no thread, and
// no handler blocks an io thread. A completion is parsed, tokenized and
// submitted on the io thread; from then on the engine thread's callbacks only
// post a "pump" to the connection's strand, which drains the job's events and
// writes SSE chunks or, at the end, the whole JSON body. A client that goes
// away (read EOF or error, failed or stalled write) aborts its engine requests,
// streamed or not.
//
// The listener starts before the engine exists: /health answers 503 (and the
// API 503) until attach() hands it the constructed engine, so a client can
// wait on /health while weights load and graphs are captured.
//
// --api-key (or SEAM_API_KEY) guards every /v1/* route ("Authorization: Bearer
// KEY", compared in constant time; 401 otherwise); /health, /metrics,
// /tokenize and /detokenize stay open, as in vLLM (its key guards /v1 only). POSTs must say "Content-Type: application/json" (415): a
// cross-site form or text/plain POST never runs.
#pragma once
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "http/server.h"
#include "server/chat_template.h"
#include "server/completion_job.h"
#include "server/server_metrics.h"

namespace seam {

class Engine;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 30000;               // 0: any free port (see HttpServer::port())
  int n_http_threads = 4;         // io threads; connections and streams cost none
  int listen_backlog = 4096;      // pending connections the kernel queues
  std::string served_model_name;  // default: the model folder's name
  std::string chat_template;      // --chat-template NAME|FILE; empty: the model's own
  std::string api_key;            // empty: no authentication
  std::string tool_call_parser;   // --tool-call-parser NAME; empty: requests with tools are refused
  std::string reasoning_parser;   // --reasoning-parser NAME; empty: reasoning stays in content
  // Per connection (see http::Options).
  double header_timeout_s = 10;
  double body_timeout_s = 60;
  double keep_alive_timeout_s = 5;
  size_t max_header_bytes = 32 << 10;
  size_t max_header_count = 100;
  size_t max_body_bytes = size_t(64) << 20;
};

class HttpServer {
 public:
  explicit HttpServer(ServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port (throws seam::Error when it cannot) and serves on the io threads.
  void start();
  // The engine is ready: resolves the chat template and the served name.
  // `engine` must outlive stop(). Throws seam::Error for a bad --chat-template.
  void attach(Engine& engine);
  // Graceful: stops accepting, closes idle and half-sent connections, lets
  // running requests finish for up to `timeout_s`, then aborts them and stops.
  void shutdown(double timeout_s);
  // Aborts open requests, closes every connection and joins the io threads.
  void stop();
  int port() const { return port_; }
  bool ready() const { return ready_.load(); }
  // Engine requests submitted by the server and not finished.
  int64_t n_in_flight() const { return n_in_flight_.load(); }
  const std::string& model_name() const { return ctx_.model_name; }

 private:
  void add_routes();
  void handle_completion(ApiKind kind, http::Request& req, const std::shared_ptr<http::Responder>& res);
  void abort_jobs();

  ServerOptions options_;
  http::Server http_;
  int port_ = 0;

  std::atomic<bool> ready_{false};
  std::atomic<bool> stopping_{false};
  Engine* engine_ = nullptr;  // set once by attach() before ready_
  std::unique_ptr<ChatTemplate> chat_template_;
  ServerContext ctx_;
  ServerMetrics metrics_;
  std::atomic<int64_t> n_in_flight_{0};

  // Open jobs, so shutdown can abort them (weak: a job lives with its request).
  std::mutex jobs_mu_;
  std::vector<std::weak_ptr<CompletionJob>> jobs_;
  void track(const std::shared_ptr<CompletionJob>& job);
};

}  // namespace seam
