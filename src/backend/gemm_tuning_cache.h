// GemmTuningCache: start-up GEMM tuning results kept across runs, in one JSON file.
//
// Start-up tuning (`--gemm-autotune`) times cuBLASLt's candidate kernels for every GEMM shape
// the graph warm-ups run: 149 plans and ~42 s for Llama-3.1-8B at the default buckets
// (docs/performance.md, ninth pass). The winners depend only on the GPU, the cuBLASLt build,
// the shape and the tuning settings, so they are written here at the end of start-up and read
// back at the next one, which then times only what the file lacks.
//
// A result is returned only to the same `scope` that wrote it (GPU name, SM count, cuBLASLt
// version, tuning settings; built by the caller). Results of other scopes stay in the file
// untouched, so one file can serve several GPUs or library versions. The algorithm is kept
// as the 64 opaque bytes of a cublasLtMatmulAlgo_t; the caller re-checks it with
// cublasLtMatmulAlgoCheck before use, so a stale or edited entry costs a re-tune, never a
// wrong kernel.
//
// A missing file is an empty cache. A file that cannot be read or parsed, or has another
// format, is reported once on stderr, treated as empty, and replaced at save(). save()
// writes a temporary file and renames it over the old one, so a reader never sees half a
// file; a failure to save is reported and start-up goes on (the cache is an optimisation).
// Two servers tuning at once each save their own view: the last rename wins, and what the
// other one timed is timed again at a later start.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <string>

namespace seam {

class GemmTuningCache {
 public:
  using Algo = std::array<uint64_t, 8>;  // the bytes of a cublasLtMatmulAlgo_t
  struct Entry {
    Algo algo{};
    double us = 0;  // its median when it was chosen (for the reader of the file)
  };
  static constexpr int kFormat = 1;

  // Loads `path` (see above). `scope` selects which results find() returns and where put() writes.
  GemmTuningCache(std::string path, std::string scope);

  const Entry* find(const std::string& key) const;
  void put(const std::string& key, const Entry& e);
  size_t size() const { return scope_entries().size(); }  // entries of this scope
  bool dirty() const { return dirty_; }

  // Writes the file when put() changed it (creating its folder). Returns false, after one
  // stderr line, when it cannot be written.
  bool save();

  const std::string& path() const { return path_; }

  // Where the cache lives unless --gemm-autotune-cache names a file: $SEAM_CACHE_DIR, else
  // $XDG_CACHE_HOME/seam, else $HOME/.cache/seam; the file is gemm_autotune.json. Empty when
  // none of the three is set.
  static std::string default_path();

 private:
  void load();  // the constructor's reading of path_ (see the top of this file)
  const std::map<std::string, Entry>& scope_entries() const;

  std::string path_, scope_;
  std::map<std::string, std::map<std::string, Entry>> scopes_;  // scope -> key -> entry
  bool dirty_ = false;
};

}  // namespace seam
