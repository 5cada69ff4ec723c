#include "core/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <vector>

#include "core/error.h"

namespace seam::log {

namespace {

// Created on first use (thread-safe static init); flushed on every message so
// a log redirected to a file is complete when the process dies.
spdlog::logger& logger() {
  static const std::shared_ptr<spdlog::logger> l = [] {
    auto made = spdlog::stderr_color_mt("seam");
    made->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%l] %v");
    made->set_level(spdlog::level::info);
    made->flush_on(spdlog::level::debug);
    return made;
  }();
  return *l;
}

spdlog::level::level_enum to_spdlog(Level level) {
  switch (level) {
    case Level::debug:
      return spdlog::level::debug;
    case Level::info:
      return spdlog::level::info;
    case Level::warning:
      return spdlog::level::warn;
    case Level::error:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

thread_local std::string t_prefix;

void vwrite(Level level, const char* format, va_list args) {
  spdlog::logger& l = logger();
  const auto lvl = to_spdlog(level);
  if (!l.should_log(lvl)) return;
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  if (n < 0) return;
  std::vector<char> buf(size_t(n) + 1);
  std::vsnprintf(buf.data(), buf.size(), format, args);
  if (t_prefix.empty()) return l.log(lvl, spdlog::string_view_t(buf.data(), size_t(n)));
  const std::string labelled = t_prefix + std::string(buf.data(), size_t(n));
  l.log(lvl, spdlog::string_view_t(labelled));
}

std::atomic<int> g_request_log_level{-1};

}  // namespace

Level parse_level(const std::string& name) {
  if (name == "debug") return Level::debug;
  if (name == "info") return Level::info;
  if (name == "warning" || name == "warn") return Level::warning;
  if (name == "error") return Level::error;
  throw Error("--log-level: expected debug, info, warning or error, got '" + name + "'");
}

void set_level(Level level) { logger().set_level(to_spdlog(level)); }
void set_thread_prefix(const std::string& prefix) { t_prefix = prefix; }
bool enabled(Level level) { return logger().should_log(to_spdlog(level)); }

#define SEAM_LOG_DEFINE(name, level)   \
  void name(const char* format, ...) { \
    va_list args;                      \
    va_start(args, format);            \
    vwrite(level, format, args);       \
    va_end(args);                      \
  }
SEAM_LOG_DEFINE(debug, Level::debug)
SEAM_LOG_DEFINE(info, Level::info)
SEAM_LOG_DEFINE(warn, Level::warning)
SEAM_LOG_DEFINE(error, Level::error)
#undef SEAM_LOG_DEFINE

void set_request_log_level(int level) { g_request_log_level.store(level < -1 ? -1 : (level > 3 ? 3 : level)); }
int request_log_level() { return g_request_log_level.load(); }

}  // namespace seam::log
