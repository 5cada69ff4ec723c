// HttpServer: the OpenAI-compatible HTTP front end of `seam serve`.
//
//   POST /v1/completions, /v1/chat/completions   (streamed or not)
//   GET  /v1/models, /health, /metrics
//
// The listener starts before the engine exists: /health answers 503 (and the
// API 503) until attach() hands it the constructed engine, so a client can
// wait on /health while weights load and graphs are captured. HTTP threads
// only parse, validate, tokenize and stream; the engine thread does the work.
// Each open stream holds one HTTP thread, so the pool is sized explicitly.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/chat_template.h"
#include "server/completion_job.h"
#include "server/server_metrics.h"

namespace seam {

class Engine;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 30000;               // 0: any free port (see HttpServer::port())
  int n_http_threads = 512;       // one per open connection / stream
  int listen_backlog = 4096;      // pending connections the kernel queues
  std::string served_model_name;  // default: the model folder's name
  std::string chat_template;      // --chat-template NAME|FILE; empty: the model's own
};

class HttpServer {
 public:
  explicit HttpServer(ServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port (throws seam::Error when it cannot) and serves on a thread.
  void start();
  // The engine is ready: resolves the chat template and the served name.
  // `engine` must outlive stop(). Throws seam::Error for a bad --chat-template.
  void attach(Engine& engine);
  // Aborts open requests, stops the listener and joins the HTTP threads.
  void stop();
  int port() const { return port_; }
  bool ready() const { return ready_.load(); }
  // Engine requests submitted by the server and not finished.
  int64_t n_in_flight() const { return n_in_flight_.load(); }

 private:
  class Listener;
  void add_routes();

  ServerOptions options_;
  std::unique_ptr<Listener> listener_;
  std::thread thread_;
  int port_ = 0;

  std::atomic<bool> ready_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> listen_done_{false};  // the listener thread has returned
  Engine* engine_ = nullptr;  // set once by attach() before ready_
  std::unique_ptr<ChatTemplate> chat_template_;
  ServerContext ctx_;
  ServerMetrics metrics_;
  std::atomic<int64_t> n_in_flight_{0};

  // Open jobs, so stop() can abort them (weak: a job lives with its request).
  std::mutex jobs_mu_;
  std::vector<std::weak_ptr<CompletionJob>> jobs_;
  void track(const std::shared_ptr<CompletionJob>& job);
};

}  // namespace seam
