// GraphCache: captured graphs under explicit integer keys (a batch-size or token bucket),
// the one capture machinery both graph runners use (DESIGN.md "Graph runtime: the rules").
//
// A key holds one or more parts, captured in order: a decode key is one graph (the whole
// step), a piecewise key one graph per piece. Invariants:
//  - keys are explicit: the buckets are fixed at construction; lookup(n) is the smallest
//    bucket >= n, and only if it was captured (no guards, no capture on a miss);
//  - capture happens at start-up only: after seal() a capture is refused and counted
//    (stats().captures_after_seal must stay 0), never run;
//  - every part is captured after a warm-up run of the same work, so first-use set-up
//    (GEMM plans, tuning) happens outside capture;
//  - graph memory is measured around capture_all (GraphMemoryMeter) and reported.
// The cache knows nothing of models or step buffers: the work is a closure.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/error.h"

namespace seam {

struct GraphCacheStats {
  int captured_keys = 0;             // keys with at least one part
  uint64_t captures = 0;             // parts captured (graphs)
  uint64_t replays = 0;              // key replays (one per step that used the cache)
  uint64_t captures_after_seal = 0;  // refused captures: must stay 0
  double capture_s = 0;              // wall time of capture_all
  int64_t graph_bytes = 0;           // device memory capture_all took (GraphMemoryMeter)
};

class GraphCache {
 public:
  // `what` names the graphs in start-up messages ("decode graphs"); `buckets` are the keys
  // (any order; sorted and deduplicated here, each >= 1).
  GraphCache(Backend& backend, std::string what, std::vector<int> buckets);
  GraphCache(const GraphCache&) = delete;
  GraphCache& operator=(const GraphCache&) = delete;

  const std::vector<int>& buckets() const { return buckets_; }  // ascending

  // Start-up: calls capture_key(key) for every bucket, largest first (capture_key stages
  // the key's padded inputs and calls capture(key, ...) once per part), then synchronizes,
  // records the time and the graph memory, and prints one summary line (and a progress bar
  // on a terminal). Once sealed it captures nothing and counts each key as refused.
  void capture_all(const std::function<void(int key)>& capture_key);
  // Appends a part to `key`: runs `work` once (warm-up), synchronizes, then records `work`
  // as a graph. Returns false, and counts captures_after_seal, once sealed.
  bool capture(int key, const std::function<void()>& work);
  void seal() { sealed_ = true; }
  bool sealed() const { return sealed_; }

  // The smallest bucket >= n if it was captured, else 0 (the caller runs eagerly).
  int lookup(int n) const;
  bool contains(int key) const { return find(key) != nullptr; }
  int n_parts(int key) const;  // 0 for a key without graphs

  // Replays every part of `key` in order, calling between(i) after part i for every part
  // but the last (piecewise: attention i between piece i and piece i + 1). A key without
  // graphs is an error (seam::Error), never a capture.
  template <typename Between>
  void replay(int key, Between&& between) {
    const Entry& e = entry(key);
    const size_t n = e.parts.size();
    for (size_t i = 0; i < n; ++i) {
      backend_.replay(*e.parts[i]);
      if (i + 1 < n) between(int(i));
    }
    stats_.replays++;
  }
  void replay(int key) {
    replay(key, [](int) {});
  }

  const GraphCacheStats& stats() const { return stats_; }

 private:
  struct Entry {
    int key = 0;
    std::vector<std::unique_ptr<Graph>> parts;
  };
  const Entry* find(int key) const;
  const Entry& entry(int key) const;  // throws seam::Error for a key without graphs

  Backend& backend_;
  std::string what_;
  std::vector<int> buckets_;   // ascending, unique
  std::vector<Entry> entries_;  // one per bucket, same order; parts empty until captured
  bool sealed_ = false;
  GraphCacheStats stats_;
};

}  // namespace seam
