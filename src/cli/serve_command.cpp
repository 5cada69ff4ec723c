// seam serve: the OpenAI-compatible HTTP server. The listener comes up first
// (GET /health answers 503 while the model loads), then the engine is built
// and handed to it; SIGINT / SIGTERM stop it cleanly.
#include <atomic>
#include <chrono>
#include <csignal>
#include <malloc.h>
#include <thread>

#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "core/log.h"
#include "engine/engine.h"
#include "server/chat_template.h"
#include "server/http_server.h"

namespace seam::cli {

namespace {
std::atomic<bool> g_stop{false};
extern "C" void on_stop_signal(int) { g_stop.store(true); }
}  // namespace

int serve_command(int argc, char** argv) {
  CLI::App app("seam serve: OpenAI-compatible HTTP server", "seam serve");
  EngineFlags flags;
  flags.add_to(app);
  ServerOptions opt;
  app.add_option("--host", opt.host, "address to listen on");
  app.add_option("--port", opt.port, "port to listen on (0: any free port)");
  app.add_option("--max-queued-requests", opt.max_queued_requests,
                 "requests (choices) in flight beyond which new ones get HTTP 503; 0: no limit");
  app.add_option("--chat-template", opt.chat_template,
                 "llama-2 | llama-3 | llama-3.1 | chatml | mistral | plain, or a file with a Jinja chat template "
                 "(default: the model's tokenizer_config.json chat_template, else plain)");
  app.add_option("--served-model-name", opt.served_model_name, "the model name of the API (default: --model-path)");
  app.add_option("--http-threads", opt.n_http_threads, "HTTP worker threads; each open stream holds one");
  app.add_option("--listen-backlog", opt.listen_backlog, "connections the kernel queues before accept");
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
  SEAM_CHECK(opt.max_queued_requests >= 0, "--max-queued-requests must be >= 0, got ", opt.max_queued_requests);
  SEAM_CHECK(opt.listen_backlog >= 1, "--listen-backlog must be >= 1, got ", opt.listen_backlog);
  const EngineConfig config = flags.finish();
  log::set_request_log_level(log_requests ? log_requests_level : -1);
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
  while (!g_stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  log::info("seam serve: stopping");
  server.stop();  // aborts open requests while the engine still runs
  return 0;
}

}  // namespace seam::cli
