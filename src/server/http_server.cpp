#include "server/http_server.h"

#include <chrono>
#include <csignal>
#include <sys/socket.h>

#include <httplib.h>

#include "engine/engine.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/openai_response.h"

namespace seam {

// httplib listens with a compiled-in backlog of 5, which drops connections
// (SYN retries of a second or more) when hundreds of clients connect at once;
// listen() on the bound socket again raises it.
class HttpServer::Listener : public httplib::Server {
 public:
  bool set_backlog(int n) { return ::listen(svr_sock_, n) == 0; }
};

namespace {

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status();
  if (e.retry_after_s() > 0) res.set_header("Retry-After", std::to_string(e.retry_after_s()));
  res.set_content(dump_json(e.body()), "application/json");
}

}  // namespace

HttpServer::HttpServer(ServerOptions options) : options_(std::move(options)), listener_(std::make_unique<Listener>()) {
  ctx_.metrics = &metrics_;
  ctx_.n_in_flight = &n_in_flight_;
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::start() {
  SEAM_CHECK(options_.n_http_threads >= 1, "--http-threads must be >= 1, got ", options_.n_http_threads);
  SEAM_CHECK(options_.port >= 0 && options_.port <= 65535, "--port must be in [0, 65535], got ", options_.port);
  // A client that goes away mid-write must fail the write, not kill the process.
  std::signal(SIGPIPE, SIG_IGN);
  const size_t n_threads = size_t(options_.n_http_threads);
  listener_->new_task_queue = [n_threads] { return new httplib::ThreadPool(n_threads); };
  listener_->set_socket_options([](socket_t s) {
    int yes = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);  // restart without waiting out TIME_WAIT
  });
  listener_->set_tcp_nodelay(true);  // stream chunks leave at once
  listener_->set_keep_alive_max_count(100000);
  listener_->set_write_timeout(60, 0);
  listener_->set_payload_max_length(size_t(64) << 20);
  add_routes();
  if (options_.port == 0) {
    port_ = listener_->bind_to_any_port(options_.host);
    SEAM_CHECK(port_ > 0, "cannot listen on ", options_.host, " (any port)");
  } else {
    SEAM_CHECK(listener_->bind_to_port(options_.host, options_.port), "cannot listen on ", options_.host, ":",
               options_.port, " (in use, or not a local address)");
    port_ = options_.port;
  }
  SEAM_CHECK(listener_->set_backlog(options_.listen_backlog), "cannot set the listen backlog to ",
             options_.listen_backlog);
  thread_ = std::thread([this] {
    listener_->listen_after_bind();
    listen_done_.store(true);
  });
}

void HttpServer::attach(Engine& engine) {
  const EngineConfig& cfg = engine.config();
  chat_template_ = std::make_unique<ChatTemplate>(ChatTemplate::for_model(
      cfg.tokenizer_path.empty() ? cfg.model_path : cfg.tokenizer_path, options_.chat_template));
  ctx_.chat_stop_ids.clear();
  for (const std::string& t : chat_template_->end_of_turn_tokens()) {
    const int32_t id = engine.tokenizer().token_to_id(t);
    if (id >= 0) ctx_.chat_stop_ids.push_back(id);
  }
  ctx_.engine = &engine;
  ctx_.chat_template = chat_template_.get();
  ctx_.model_name = options_.served_model_name.empty() ? cfg.model_path : options_.served_model_name;
  engine_ = &engine;
  ready_.store(true);
}

void HttpServer::stop() {
  if (stopping_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lock(jobs_mu_);
    for (auto& w : jobs_)
      if (auto job = w.lock()) job->abort_unfinished();
  }
  if (thread_.joinable()) {
    // httplib's stop() does nothing until listen_after_bind has entered its
    // accept loop; a stop right after start() must wait for that.
    while (!listener_->is_running() && !listen_done_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    listener_->stop();
    thread_.join();
  }
}

void HttpServer::track(const std::shared_ptr<CompletionJob>& job) {
  std::lock_guard<std::mutex> lock(jobs_mu_);
  if (jobs_.size() >= 256 && jobs_.size() % 256 == 0)
    std::erase_if(jobs_, [](const std::weak_ptr<CompletionJob>& w) { return w.expired(); });
  jobs_.push_back(job);
}

void HttpServer::add_routes() {
  Listener& s = *listener_;

  // 503 while loading or stopping, and for good once the engine is dead (a
  // supervisor then restarts the process, which exits non-zero).
  s.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (ready_.load()) {
      if (auto cause = engine_->dead_cause()) {
        res.status = 503;
        res.set_content(dump_json({{"status", "dead"}, {"error", engine_dead(*cause).what()}}), "application/json");
        return;
      }
    }
    const bool ok = ready_.load() && !stopping_.load();
    res.status = ok ? 200 : 503;
    res.set_content(ok ? "{\"status\":\"ok\"}" : "{\"status\":\"loading\"}", "application/json");
  });

  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    const EngineStats stats = ready_.load() ? engine_->stats() : EngineStats{};
    res.set_content(metrics_.render(ready_.load() ? &stats : nullptr, n_in_flight_.load()), "text/plain; version=0.0.4");
  });

  s.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    if (!ready_.load()) return send_error(res, ApiError(503, "the model is still loading"));
    nlohmann::json m;
    m["id"] = ctx_.model_name;
    m["object"] = "model";
    m["created"] = 0;
    m["owned_by"] = "seam";
    m["root"] = engine_->config().model_path;
    m["max_model_len"] = engine_->max_context();
    m["vocab_size"] = engine_->model_info().vocab_size;  // seam's extra: bench-serving draws random ids with it
    res.set_content(dump_json({{"object", "list"}, {"data", nlohmann::json::array({m})}}), "application/json");
  });

  // The body is read through a content reader: httplib's plain handlers refuse
  // bodies over 8 KiB sent as application/x-www-form-urlencoded (curl's
  // default content type) with 413, and would parse JSON as a query string.
  auto completion = [this](ApiKind kind) {
    return [this, kind](const httplib::Request&, httplib::Response& res, const httplib::ContentReader& reader) {
      try {
        std::string body;
        const size_t max_body = size_t(64) << 20;
        reader([&](const char* data, size_t n) {
          body.append(data, n);
          return body.size() <= max_body;
        });
        if (body.size() > max_body) throw ApiError(413, "the request body is over 64 MiB");
        if (!ready_.load())
          throw ApiError(503, "the model is still loading; wait for GET /health to return 200").with_retry_after(1);
        if (stopping_.load()) throw ApiError(503, "the server is shutting down");
        ApiRequest r = parse_api_request(body, kind);
        if (!r.model.empty() && r.model != ctx_.model_name && r.model != engine_->config().model_path)
          throw ApiError(404, "The model '" + r.model + "' does not exist; this server serves '" + ctx_.model_name + "'",
                         "model", "invalid_request_error", "model_not_found");
        const bool stream = r.stream;
        auto job = std::make_shared<CompletionJob>(ctx_, std::move(r));
        job->submit();
        track(job);
        if (!stream) {
          res.set_content(dump_json(job->wait_response()), "application/json");
          return;
        }
        res.set_header("Cache-Control", "no-cache");
        res.set_chunked_content_provider(
            "text/event-stream",
            [job](size_t, httplib::DataSink& sink) {
              const bool ok = job->stream([&sink](const std::string& s) { return sink.write(s.data(), s.size()); });
              if (ok) sink.done();
              return ok;
            },
            // Not success: the client went away (or the server stopped) before the end.
            [job](bool success) {
              if (!success) job->abort_unfinished();
            });
      } catch (const std::exception& e) {
        // By kind (api/error_kind.h): 400 bad input, 404, 503 + Retry-After, 500.
        const ApiError a = from_exception(e);
        metrics_.count_rejected(a.status());
        send_error(res, a);
      }
    };
  };
  s.Post("/v1/completions", completion(ApiKind::completion));
  s.Post("/v1/chat/completions", completion(ApiKind::chat));

  // Unknown paths and methods get an OpenAI-style body too.
  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const std::string msg = res.status == 404 ? "no route " + req.method + " " + req.path
                                              : "HTTP " + std::to_string(res.status) + " for " + req.path;
    res.set_content(dump_json(ApiError::error_body(msg, ApiError::default_type(res.status), "", "")),
                    "application/json");
  });
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string msg = "internal error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      msg += std::string(": ") + e.what();
    } catch (...) {
    }
    send_error(res, ApiError(500, msg));
  });
}

}  // namespace seam
