// The subcommands of the `seam` executable; each lives in cli/<name>_command.cpp.
#pragma once

namespace seam::cli {
int generate_command(int argc, char** argv);
int serve_command(int argc, char** argv);
int bench_one_batch_command(int argc, char** argv);
int bench_serving_command(int argc, char** argv);
int tokenize_command(int argc, char** argv);
int detokenize_command(int argc, char** argv);
int chat_template_command(int argc, char** argv);
int quantize_fp8_command(int argc, char** argv);
}  // namespace seam::cli
