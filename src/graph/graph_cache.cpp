#include "graph/graph_cache.h"

#include <algorithm>
#include <chrono>

#include "graph/capture_progress.h"
#include "graph/graph_memory_meter.h"

namespace seam {

GraphCache::GraphCache(Backend& backend, std::string what, std::vector<int> buckets)
    : backend_(backend), what_(std::move(what)), buckets_(std::move(buckets)) {
  std::sort(buckets_.begin(), buckets_.end());
  buckets_.erase(std::unique(buckets_.begin(), buckets_.end()), buckets_.end());
  SEAM_CHECK(buckets_.empty() || buckets_.front() >= 1, what_, ": graph bucket ", buckets_.front(),
             " is not a positive size");
  entries_.resize(buckets_.size());
  for (size_t i = 0; i < buckets_.size(); ++i) entries_[i].key = buckets_[i];
}

const GraphCache::Entry* GraphCache::find(int key) const {
  const auto it = std::lower_bound(buckets_.begin(), buckets_.end(), key);
  if (it == buckets_.end() || *it != key) return nullptr;
  const Entry& e = entries_[size_t(it - buckets_.begin())];
  return e.parts.empty() ? nullptr : &e;
}

const GraphCache::Entry& GraphCache::entry(int key) const {
  const Entry* e = find(key);
  SEAM_CHECK(e, what_, ": no graph captured for key ", key, " (replay needs a captured key; lookup() finds one)");
  return *e;
}

int GraphCache::lookup(int n) const {
  const auto it = std::lower_bound(buckets_.begin(), buckets_.end(), n);
  if (it == buckets_.end()) return 0;
  return entries_[size_t(it - buckets_.begin())].parts.empty() ? 0 : *it;
}

int GraphCache::n_parts(int key) const {
  const Entry* e = find(key);
  return e ? int(e->parts.size()) : 0;
}

bool GraphCache::capture(int key, const std::function<void()>& work) {
  if (sealed_) {  // never reached by design; counted so tests can prove it
    stats_.captures_after_seal++;
    return false;
  }
  const auto it = std::lower_bound(buckets_.begin(), buckets_.end(), key);
  SEAM_CHECK(it != buckets_.end() && *it == key, what_, ": ", key, " is not one of the graph buckets");
  Entry& e = entries_[size_t(it - buckets_.begin())];
  work();  // warm-up: first-use set-up happens outside capture
  backend_.synchronize();
  backend_.begin_capture();
  work();
  e.parts.push_back(backend_.end_capture());
  if (e.parts.size() == 1) stats_.captured_keys++;
  stats_.captures++;
  return true;
}

void GraphCache::capture_all(const std::function<void(int key)>& capture_key) {
  if (sealed_) {
    stats_.captures_after_seal += buckets_.size();
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const GraphMemoryMeter memory(backend_);
  CaptureProgress progress(what_, int(buckets_.size()));
  for (auto it = buckets_.rbegin(); it != buckets_.rend(); ++it) {  // largest first
    capture_key(*it);
    progress.step(*it);
  }
  backend_.synchronize();
  stats_.graph_bytes = memory.bytes();
  stats_.capture_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  progress.done(stats_.capture_s, stats_.graph_bytes);
}

}  // namespace seam
