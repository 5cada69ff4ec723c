// Start-up progress of graph capture: a bar on a terminal (a display, not a log
// line), one summary line in the log always.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "core/log.h"

namespace seam {

class CaptureProgress {
 public:
  CaptureProgress(std::string what, int total) : what_(std::move(what)), total_(total) {}
  void step(int key) {
    ++done_;
    if (!isatty(fileno(stderr)) || total_ == 0) return;
    const int width = 30, filled = done_ * width / total_;
    std::fprintf(stderr, "\rcapturing %s [%s%s] %d/%d (key %d)   ", what_.c_str(), std::string(size_t(filled), '#').c_str(),
                 std::string(size_t(width - filled), '.').c_str(), done_, total_, key);
    std::fflush(stderr);
  }
  void done(double seconds, int64_t bytes) {
    if (isatty(fileno(stderr)) && total_ > 0) std::fprintf(stderr, "\n");
    log::info("captured %d %s in %.2f s, graph memory %.1f MiB", total_, what_.c_str(), seconds,
              double(bytes) / (1024.0 * 1024.0));
  }

 private:
  std::string what_;
  int total_;
  int done_ = 0;
};

}  // namespace seam
