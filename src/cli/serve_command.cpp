// seam serve: the OpenAI-compatible HTTP server. The listener comes up first
// (GET /health answers 503 while the model loads), then the engine is built
// and handed to it; SIGINT / SIGTERM stop it cleanly (exit 0). When a device
// fault kills the engine, every in-flight and later request gets 500 "engine is
// dead: ..." and /health 503; the process then exits non-zero, so that a
// supervisor restarts it.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "engine/engine.h"
#include "server/chat_template.h"
#include "server/http_server.h"

namespace seam::cli {

namespace {
std::atomic<bool> g_stop{false};
// After the engine died: how long later requests still get their 500 before the
// process exits, and its exit status.
constexpr int k_dead_linger_ms = 1000;
constexpr int k_exit_engine_dead = 3;
extern "C" void on_stop_signal(int) { g_stop.store(true); }
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
                 "requests (choices) in flight beyond which new ones get HTTP 503 with Retry-After; 0: no limit");
  app.add_option("--chat-template", opt.chat_template,
                 "a file with a Jinja chat template, the name of one of the model's named templates, or a "
                 "built-in shortcut: llama-2 | llama-3 | llama-3.1 | chatml | mistral | plain (default: the "
                 "model's own template, rendered by the Jinja engine, else plain)");
  app.add_option("--served-model-name", opt.served_model_name, "the model name of the API (default: --model-path)");
  app.add_option("--http-threads", opt.n_http_threads, "HTTP worker threads; each open stream holds one");
  app.add_option("--listen-backlog", opt.listen_backlog, "connections the kernel queues before accept");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  SEAM_CHECK(max_queued_requests >= 0, "--max-queued-requests must be >= 0, got ", max_queued_requests);
  SEAM_CHECK(opt.listen_backlog >= 1, "--listen-backlog must be >= 1, got ", opt.listen_backlog);
  EngineConfig config = flags.finish();
  config.max_queued_requests = max_queued_requests;
  // A bad --chat-template fails now, not after the model has loaded.
  (void)ChatTemplate::for_model(config.tokenizer_path.empty() ? config.model_path : config.tokenizer_path,
                                opt.chat_template);

  HttpServer server(opt);
  server.start();
  std::fprintf(stderr, "seam serve: listening on http://%s:%d (loading the model; /health is 503 until ready)\n",
               opt.host.c_str(), server.port());
  const auto t0 = std::chrono::steady_clock::now();
  Engine engine(config);
  server.attach(engine);
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "seam serve: ready in %.1f s: model %s, context %d, KV pool %d tokens; serving on %s:%d\n",
               load_s, config.model_path.c_str(), engine.max_context(), engine.kv_pool_tokens(), opt.host.c_str(),
               server.port());
  std::fflush(stderr);

  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  while (!g_stop.load() && !engine.dead()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (auto cause = engine.dead_cause()) {
    // The engine already failed every request it held; let the HTTP threads answer
    // them, and keep answering newcomers (500) and /health (503) a moment longer.
    std::fprintf(stderr, "seam serve: engine is dead (%s); exiting after answering open requests\n",
                 cause->c_str());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (server.n_in_flight() > 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::this_thread::sleep_for(std::chrono::milliseconds(k_dead_linger_ms));
    server.stop();  // finishes the responses being written
    return k_exit_engine_dead;
  }
  std::fprintf(stderr, "seam serve: stopping\n");
  server.stop();  // aborts open requests while the engine still runs
  return 0;
}

}  // namespace seam::cli
