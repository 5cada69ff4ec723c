// seam's log: one spdlog logger on stderr with levels and timestamps
// ("[2026-12-01 19:50:00.123] [info] message"), shared by every layer. The
// header keeps spdlog (and fmt) out of the includers: messages are printf
// formats, checked by the compiler. Output that is a command's product
// (generate's text, tokenize's ids, bench tables) goes to stdout, not here.
#pragma once
#include <string>

namespace seam::log {

enum class Level { debug, info, warning, error };

// "debug" | "info" | "warning" | "error" (sglang's --log-level names);
// throws seam::Error for anything else.
Level parse_level(const std::string& name);
void set_level(Level level);  // default: info
bool enabled(Level level);
// A label put before every message this thread logs (tensor parallelism: "tp rank 1/2: ", so
// each rank's start-up lines and errors say whose they are); "" (the default) for none.
void set_thread_prefix(const std::string& prefix);

void debug(const char* format, ...) __attribute__((format(printf, 1, 2)));
void info(const char* format, ...) __attribute__((format(printf, 1, 2)));
void warn(const char* format, ...) __attribute__((format(printf, 1, 2)));
void error(const char* format, ...) __attribute__((format(printf, 1, 2)));

// Per-request logging of the server (sglang's --log-requests and
// --log-requests-level): -1 off (the default); 0 metadata (ids, token
// counts, timings, finish reason); 1 also the sampling parameters; 2 also the
// first 2048 bytes of the prompt text; 3 the whole prompt text. The prompt
// is never logged below 2.
void set_request_log_level(int level);
int request_log_level();

}  // namespace seam::log
