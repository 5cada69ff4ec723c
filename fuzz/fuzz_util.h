// Helpers of the fuzz targets: a private scratch folder for targets whose
// parser reads files, and the one way a target reports a finding (abort, so
// libFuzzer saves the input).
#pragma once
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace seam::fuzz {

// /dev/shm (or $TMPDIR) / seam_fuzz_<pid>: one folder per process, made once.
inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    const char* base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : std::getenv("TMPDIR");
    std::string d = std::string(base ? base : "/tmp") + "/seam_fuzz_" + std::to_string(getpid());
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

inline void write_file(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

[[noreturn]] inline void finding(const char* what, const char* detail) {
  std::fprintf(stderr, "FUZZ FINDING: %s: %s\n", what, detail);
  std::abort();
}

}  // namespace seam::fuzz
