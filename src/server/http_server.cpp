#include "server/http_server.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "core/log.h"
#include "engine/engine.h"
#include "server/api_error.h"
#include "server/api_key.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/tokenize_route.h"

namespace seam {

namespace {

using Clock = std::chrono::steady_clock;

http::Response error_response(const ApiError& e) {
  http::Response r(e.status(), "application/json", dump_json(e.body()));
  // A full queue (or a server still loading) is worth retrying: the error says when.
  if (e.retry_after_s() > 0) r.headers.push_back({"Retry-After", std::to_string(e.retry_after_s())});
  if (e.status() == 401) r.headers.push_back({"WWW-Authenticate", "Bearer"});
  return r;
}

// The served name by default: the model folder's name, never its absolute path.
std::string folder_name(const std::string& model_path) {
  std::filesystem::path p(model_path);
  while (!p.empty() && p.filename().empty()) p = p.parent_path();  // "models/x/" -> "models/x"
  const std::string name = p.filename().string();
  return name.empty() ? "model" : name;
}

// "application/json", any case, with or without parameters ("; charset=utf-8").
bool is_json_content_type(const std::string& value) {
  std::string media = value.substr(0, value.find(';'));
  while (!media.empty() && (media.back() == ' ' || media.back() == '\t')) media.pop_back();
  while (!media.empty() && (media.front() == ' ' || media.front() == '\t')) media.erase(0, 1);
  return http::iequals(media, "application/json");
}

// What one completion's strand-side pump remembers between engine events.
struct Pump {
  bool stream = false;
  bool started = false;
  bool done = false;
};

// On the connection's strand: drains the job's events into the reply. Streams
// start with their header on the first pump; a whole response goes out once
// every choice finished.
void pump(Pump& p, CompletionJob& job, http::Responder& res) {
  if (p.done) return;
  if (p.stream) {
    if (!p.started) {
      p.started = true;
      res.start_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}});
    }
    std::string buf;
    const bool finished = job.poll_stream(buf);
    if (!buf.empty()) res.write(std::move(buf));
    if (finished) {
      p.done = true;
      res.finish();
    }
    return;
  }
  try {
    if (auto body = job.poll_response()) {
      p.done = true;
      res.send(http::Response(200, "application/json", dump_json(*body)));
    }
  } catch (const ApiError& e) {
    p.done = true;
    res.send(error_response(e));
  }
}

}  // namespace

HttpServer::HttpServer(ServerOptions options)
    : options_(std::move(options)), http_([&] {
        http::Options o;
        o.host = options_.host;
        o.port = options_.port;
        o.n_io_threads = options_.n_http_threads;
        o.n_worker_threads = options_.n_http_threads;
        o.listen_backlog = options_.listen_backlog;
        o.header_timeout_s = options_.header_timeout_s;
        o.body_timeout_s = options_.body_timeout_s;
        o.keep_alive_timeout_s = options_.keep_alive_timeout_s;
        o.max_header_bytes = options_.max_header_bytes;
        o.max_header_count = options_.max_header_count;
        o.max_body_bytes = options_.max_body_bytes;
        return o;
      }()) {
  ctx_.metrics = &metrics_;
  ctx_.n_in_flight = &n_in_flight_;
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::start() {
  // The replies the HTTP layer makes itself (404, 405, 408, 413, 431, ...) carry
  // an OpenAI error body too.
  http_.set_error_body([this](int status, const std::string& message) {
    metrics_.count_rejected(status);
    return error_response(ApiError(status, message));
  });
  add_routes();
  http_.start();
  port_ = http_.port();
  if (options_.api_key.empty() && !is_loopback_host(options_.host))
    log::warn("seam serve: listening on %s without an API key: anyone who can reach it can use it "
              "(--api-key or SEAM_API_KEY)",
              options_.host.c_str());
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
  ctx_.tool_call_parser = options_.tool_call_parser;
  ctx_.reasoning_parser = options_.reasoning_parser;
  ctx_.model_name = options_.served_model_name.empty() ? folder_name(cfg.model_path) : options_.served_model_name;
  engine_ = &engine;
  ready_.store(true);
}

void HttpServer::abort_jobs() {
  std::lock_guard<std::mutex> lock(jobs_mu_);
  for (auto& w : jobs_)
    if (auto job = w.lock()) job->abort_unfinished();
}

void HttpServer::shutdown(double timeout_s) {
  stopping_.store(true);  // /health and new requests: 503
  http_.stop_accepting();
  http_.close_idle_connections();
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(std::max(0.0, timeout_s)));
  while (http_.n_active_requests() > 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (http_.n_active_requests() > 0) {
    log::warn("seam serve: %zu requests still running after %.0f s: aborting them", http_.n_active_requests(),
              timeout_s);
    abort_jobs();
    // Their aborted replies go out within an engine step or two.
    const auto flush_until = Clock::now() + std::chrono::seconds(2);
    while (http_.n_active_requests() > 0 && Clock::now() < flush_until)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop();
}

void HttpServer::stop() {
  stopping_.store(true);
  abort_jobs();
  http_.stop();
}

void HttpServer::track(const std::shared_ptr<CompletionJob>& job) {
  std::lock_guard<std::mutex> lock(jobs_mu_);
  if (jobs_.size() >= 256 && jobs_.size() % 256 == 0)
    std::erase_if(jobs_, [](const std::weak_ptr<CompletionJob>& w) { return w.expired(); });
  jobs_.push_back(job);
}

void HttpServer::add_routes() {
  // Every /v1/* route: the API key, when one is set.
  auto check_key = [this](const http::Request& req) {
    if (options_.api_key.empty()) return;
    if (!api_key_matches(req.header("Authorization"), options_.api_key))
      throw ApiError(401, "missing or incorrect API key: send 'Authorization: Bearer <key>'", "",
                     "invalid_request_error", "invalid_api_key");
  };
  auto reply_error = [this](const std::shared_ptr<http::Responder>& res, const ApiError& e) {
    metrics_.count_rejected(e.status());
    res->send(error_response(e));
  };

  // 503 while loading or stopping, and for good once the engine is dead (a
  // supervisor then restarts the process, which exits non-zero).
  http_.route("GET", "/health", [this](http::Request&, const std::shared_ptr<http::Responder>& res) {
    if (ready_.load())
      if (auto cause = engine_->dead_cause())
        return res->send(http::Response(503, "application/json",
                                        dump_json({{"status", "dead"}, {"error", engine_dead(*cause).what()}})));
    const bool ok = ready_.load() && !stopping_.load();
    res->send(http::Response(ok ? 200 : 503, "application/json",
                             ok ? "{\"status\":\"ok\"}"
                                : (stopping_.load() ? "{\"status\":\"stopping\"}" : "{\"status\":\"loading\"}")));
  });

  http_.route("GET", "/metrics", [this](http::Request&, const std::shared_ptr<http::Responder>& res) {
    const EngineStats stats = ready_.load() ? engine_->stats() : EngineStats{};
    res->send(http::Response(200, "text/plain; version=0.0.4",
                             metrics_.render(ready_.load() ? &stats : nullptr, n_in_flight_.load())));
  });

  http_.route("GET", "/v1/models", [=, this](http::Request& req, const std::shared_ptr<http::Responder>& res) {
    try {
      check_key(req);
      if (!ready_.load()) throw ApiError(503, "the model is still loading");
      nlohmann::json m;
      m["id"] = ctx_.model_name;
      m["object"] = "model";
      m["created"] = 0;
      m["owned_by"] = "seam";
      m["root"] = engine_->config().model_path;
      m["max_model_len"] = engine_->max_context();
      m["vocab_size"] = engine_->model_info().vocab_size;  // seam's extra: bench-serving draws random ids with it
      res->send(http::Response(200, "application/json",
                               dump_json({{"object", "list"}, {"data", nlohmann::json::array({m})}})));
    } catch (const ApiError& e) {
      reply_error(res, e);
    }
  });

  // vLLM's /tokenize and /detokenize, at the root as there. Like vLLM (whose
  // key middleware guards paths starting with /v1 only), they are open: they
  // run no model, and answer only with what the tokenizer files say. Still
  // JSON only (415), and parsed on a worker.
  for (const auto& [path, body_of] :
       {std::pair{"/tokenize", &tokenize_body}, std::pair{"/detokenize", &detokenize_body}}) {
    http_.route("POST", path, [=, this](http::Request& req, const std::shared_ptr<http::Responder>& res) {
      if (!is_json_content_type(req.header("Content-Type")))
        return reply_error(res, ApiError(415, "the request body must be sent as 'Content-Type: application/json'"));
      http_.post_work([=, this, req = std::move(req)]() mutable {
        try {
          if (!ready_.load())
            throw ApiError(503, "the model is still loading; wait for GET /health to return 200").with_retry_after(1);
          if (stopping_.load()) throw ApiError(503, "the server is shutting down");
          res->send(http::Response(200, "application/json", dump_json(body_of(ctx_, req.body))));
        } catch (const std::exception& e) {
          reply_error(res, from_exception(e));
        }
      });
    });
  }

  for (const auto& [path, kind] : {std::pair{"/v1/completions", ApiKind::completion},
                                   std::pair{"/v1/chat/completions", ApiKind::chat}}) {
    http_.route("POST", path, [=, this](http::Request& req, const std::shared_ptr<http::Responder>& res) {
      try {
        check_key(req);
        if (!is_json_content_type(req.header("Content-Type")))
          throw ApiError(415, "the request body must be sent as 'Content-Type: application/json'", "", "", "");
      } catch (const ApiError& e) {
        return reply_error(res, e);
      }
      // Parsing, templating and tokenizing take CPU time: on a worker, not an io thread.
      http_.post_work([=, this, req = std::move(req)]() mutable {
        try {
          handle_completion(kind, req, res);
        } catch (const std::exception& e) {
          // By kind (api/error_kind.h): 400 bad input, 404, 503 + Retry-After, 500.
          reply_error(res, from_exception(e));
        }
      });
    });
  }
}

// On a worker thread: everything up to the engine submission, then returns; the
// pump answers from the engine's events.
void HttpServer::handle_completion(ApiKind kind, http::Request& req, const std::shared_ptr<http::Responder>& res) {
  if (!ready_.load())
    throw ApiError(503, "the model is still loading; wait for GET /health to return 200").with_retry_after(1);
  if (stopping_.load()) throw ApiError(503, "the server is shutting down");
  ApiRequest r = parse_api_request(req.body, kind);
  if (!r.model.empty() && r.model != ctx_.model_name && r.model != engine_->config().model_path)
    throw ApiError(404, "The model '" + r.model + "' does not exist; this server serves '" + ctx_.model_name + "'",
                   "model", "invalid_request_error", "model_not_found");
  auto state = std::make_shared<Pump>();
  state->stream = r.stream;
  auto job = std::make_shared<CompletionJob>(ctx_, std::move(r));
  // The engine thread only posts; the pump holds the job while it runs. The
  // job holds the responder (through notify), so the responder holds the job
  // only weakly: no cycle.
  std::weak_ptr<CompletionJob> weak = job;
  job->set_notify([weak, res, state] {
    if (auto j = weak.lock()) res->post([j, res, state] { pump(*state, *j, *res); });
  });
  res->set_on_cancel([weak] {
    if (auto j = weak.lock()) j->abort_unfinished();  // the client is gone: free its engine slots
  });
  job->submit();
  track(job);
  // The client may have left while this ran (before the cancel could see the job).
  if (res->cancelled()) job->abort_unfinished();
  res->post([job, res, state] { pump(*state, *job, *res); });
}

}  // namespace seam
