// seam: one executable, several subcommands (as sglang's python -m entry points).
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "cli/commands.h"
#include "core/error.h"
#include "core/log.h"

namespace {
void usage() {
  std::fprintf(stderr,
               "usage: seam <command> [options]\n"
               "commands:\n"
               "  generate         offline generation (--model-path DIR --prompt TEXT)\n"
               "  serve            OpenAI-compatible HTTP server\n"
               "  bench-one-batch  latency of one static batch (prefill + decode)\n"
               "  bench-serving    load generator against a running server\n"
               "  tokenize         JSON lines {text, add_special_tokens} -> {ids}\n"
               "  detokenize       JSON lines {ids} -> {text}\n"
               "  chat-template    JSON lines {messages, tools, ...} -> {text} (the model's Jinja chat template)\n"
               "  quantize-fp8     an FP8 checkpoint of a float model folder (each format seam loads)\n"
               "run `seam <command> --help` for its options\n");
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    usage();
    return argc < 2 ? 2 : 0;
  }
  std::string cmd = argv[1];
  // Subcommands see argv shifted by one, so argv[0] is "seam <command>".
  int sub_argc = argc - 1;
  char** sub_argv = argv + 1;
  try {
    if (cmd == "generate") return seam::cli::generate_command(sub_argc, sub_argv);
    if (cmd == "serve") return seam::cli::serve_command(sub_argc, sub_argv);
    if (cmd == "bench-one-batch") return seam::cli::bench_one_batch_command(sub_argc, sub_argv);
    if (cmd == "bench-serving") return seam::cli::bench_serving_command(sub_argc, sub_argv);
    if (cmd == "tokenize") return seam::cli::tokenize_command(sub_argc, sub_argv);
    if (cmd == "detokenize") return seam::cli::detokenize_command(sub_argc, sub_argv);
    if (cmd == "chat-template") return seam::cli::chat_template_command(sub_argc, sub_argv);
    if (cmd == "quantize-fp8") return seam::cli::quantize_fp8_command(sub_argc, sub_argv);
  } catch (const seam::Error& e) {
    seam::log::error("seam %s: %s", cmd.c_str(), e.what());
    return 1;
  } catch (const std::exception& e) {
    seam::log::error("seam %s: internal error: %s", cmd.c_str(), e.what());
    return 1;
  }
  seam::log::error("seam: unknown command '%s'", cmd.c_str());
  usage();
  return 2;
}
