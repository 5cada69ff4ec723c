// seam serve: the OpenAI-compatible HTTP server. The listener comes up first
// (GET /health answers 503 while the model loads), then the engine is built
// and handed to it. SIGINT / SIGTERM shut down gracefully: no new connections,
// running requests finish for up to --graceful-shutdown-timeout seconds, then
// are aborted, and the process exits 0; a second signal exits at once. When a
// device fault kills the engine, every in-flight and later request gets 500
// "engine is dead: ..." and /health 503; the process then exits non-zero, so
// that a supervisor restarts it.
#include <atomic>
#include <chrono>
#include <csignal>
#include <malloc.h>
#include <thread>

#include <unistd.h>

#include "cli/commands.h"
#include "cli/follower_node.h"
#include "cli/engine_flags.h"
#include "core/log.h"
#include "engine/engine.h"
#include "server/api_key.h"
#include "server/chat_template.h"
#include "server/reasoning_parser.h"
#include "server/tool_call_parser.h"
#include "server/http_server.h"

namespace seam::cli {

namespace {
// After the engine died: how long later requests still get their 500 before the
// process exits, and its exit status.
constexpr int k_dead_linger_ms = 1000;
constexpr int k_exit_engine_dead = 3;
std::atomic<int> g_n_signals{0};
extern "C" void on_stop_signal(int sig) {
  // Async-signal-safe only: a counter, and _exit for the second signal.
  if (g_n_signals.fetch_add(1) >= 1) _exit(128 + sig);
}
}  // namespace

int serve_command(int argc, char** argv) {
  CLI::App app("seam serve: OpenAI-compatible HTTP server", "seam serve");
  EngineFlags flags;
  flags.add_to(app);
  ServerOptions opt;
  app.add_option("--host", opt.host, "address to listen on");
  app.add_option("--port", opt.port, "port to listen on (0: any free port)");
  int max_queued_requests = 0;
  app.add_option("--max-queued-requests", max_queued_requests,
                 "requests (choices) in flight beyond which new ones get HTTP 503 with Retry-After (a request "
                 "with more choices than this gets 400); 0: no limit");
  app.add_option("--chat-template", opt.chat_template,
                 "a file with a Jinja chat template, the name of one of the model's named templates, or a "
                 "built-in shortcut: llama-2 | llama-3 | llama-3.1 | chatml | mistral | plain (default: the "
                 "model's own template, rendered by the Jinja engine, else plain)");
  app.add_option("--tool-call-parser", opt.tool_call_parser,
                 "parse tool calls out of chat output (sglang's names): llama3 | hermes | qwen25 | qwen3_coder | mistral | "
                 "deepseekv3 | deepseekv31 | kimi_k2 | glm45 | glm47 | pythonic; without it, chat requests with tools get 400");
  app.add_option("--reasoning-parser", opt.reasoning_parser,
                 "split <think>...</think> into reasoning_content: deepseek-r1 | qwen3 | qwen3-thinking | glm45 | kimi");
  app.add_option("--served-model-name", opt.served_model_name,
                 "the model name of the API (default: the model folder's name)");
  app.add_option("--api-key", opt.api_key,
                 "require 'Authorization: Bearer KEY' on every /v1/* route (default: $SEAM_API_KEY; /health and "
                 "/metrics stay open)");
  app.add_option("--http-threads", opt.n_http_threads,
                 "HTTP io threads (connections and streams cost no thread)");
  app.add_option("--listen-backlog", opt.listen_backlog, "connections the kernel queues before accept");
  app.add_option("--http-header-timeout", opt.header_timeout_s,
                 "seconds a client has for a request's whole header, from its first byte (else 408 and close)");
  app.add_option("--http-body-timeout", opt.body_timeout_s,
                 "seconds a client has for a request's whole body after its header (else 408; the request never runs)");
  app.add_option("--timeout-keep-alive", opt.keep_alive_timeout_s,
                 "seconds an idle kept-alive connection stays open (uvicorn's name)");
  app.add_option("--http-max-header-bytes", opt.max_header_bytes, "request line + headers beyond which: HTTP 431");
  app.add_option("--http-max-headers", opt.max_header_count, "header fields beyond which: HTTP 431");
  double graceful_shutdown_timeout_s = 30;
  app.add_option("--graceful-shutdown-timeout", graceful_shutdown_timeout_s,
                 "on SIGTERM/SIGINT, seconds running requests may still finish before they are aborted");
  bool log_requests = false;
  int log_requests_level = 0;
  app.add_flag("--log-requests", log_requests,
               "log every request: ids, token counts, queue / TTFT / e2e times, finish reason");
  app.add_option("--log-requests-level", log_requests_level,
                 "with --log-requests: 0 metadata, 1 also sampling parameters, 2 also the first 2048 bytes of the "
                 "prompt, 3 the whole prompt (default 0: prompt text is never logged unless asked)")
      ->check(CLI::Range(0, 3));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  SEAM_CHECK(max_queued_requests >= 0, "--max-queued-requests must be >= 0, got ", max_queued_requests);
  SEAM_CHECK(opt.listen_backlog >= 1, "--listen-backlog must be >= 1, got ", opt.listen_backlog);
  SEAM_CHECK(graceful_shutdown_timeout_s >= 0, "--graceful-shutdown-timeout must be >= 0, got ",
             graceful_shutdown_timeout_s);
  opt.api_key = resolve_api_key(opt.api_key);
  EngineConfig config = flags.finish();
  if (config.node_rank > 0) return run_follower_node(config);  // no HTTP on the other nodes
  config.max_queued_requests = max_queued_requests;
  log::set_request_log_level(log_requests ? log_requests_level : -1);
  if (!opt.tool_call_parser.empty()) (void)make_tool_call_parser(opt.tool_call_parser);
  if (!opt.reasoning_parser.empty()) check_reasoning_parser_name(opt.reasoning_parser);
  // A bad --chat-template fails now, not after the model has loaded.
  (void)ChatTemplate::for_model(config.tokenizer_path.empty() ? config.model_path : config.tokenizer_path,
                                opt.chat_template);

  // Blocks of 4 MiB and more (request bodies, long prompts and their copies)
  // are mapped and unmapped on their own, so memory goes back to the system
  // when a large request ends; glibc's default threshold grows with the
  // largest block freed (up to 32 MiB) and keeps such blocks in the heap.
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
  HttpServer server(opt);
  server.start();
  log::info("seam serve: listening on http://%s:%d (loading the model; /health is 503 until ready)", opt.host.c_str(),
            server.port());
  const auto t0 = std::chrono::steady_clock::now();
  Engine engine(config);
  server.attach(engine);
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  log::info("seam serve: ready in %.1f s: model %s, context %d, KV pool %d tokens; serving on %s:%d", load_s,
            config.model_path.c_str(), engine.max_context(), engine.kv_pool_tokens(), opt.host.c_str(), server.port());

  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  while (g_n_signals.load() == 0 && !engine.dead()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (auto cause = engine.dead_cause()) {
    // The engine already failed every request it held; let the connections answer
    // them, and keep answering newcomers (500) and /health (503) a moment longer.
    log::error("seam serve: engine is dead (%s); exiting after answering open requests", cause->c_str());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (server.n_in_flight() > 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::this_thread::sleep_for(std::chrono::milliseconds(k_dead_linger_ms));
    server.shutdown(1.0);  // finishes the responses being written
    return k_exit_engine_dead;
  }
  log::info("seam serve: shutting down (up to %.0f s for running requests; a second signal exits now)",
            graceful_shutdown_timeout_s);
  server.shutdown(graceful_shutdown_timeout_s);  // aborts what is left while the engine still runs
  log::info("seam serve: stopped");
  return 0;
}

}  // namespace seam::cli
