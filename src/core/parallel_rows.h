// parallel_rows: a loop over n independent items split into contiguous ranges over the host's
// threads (the CPU reference's FP8 product, quantize-fp8). Callers give each item its own
// output, so the result is the sequential loop's whatever the thread count; work below
// min_items_per_range stays on fewer threads (a thread costs ~10 us to start).
#pragma once
#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace seam {

// Calls fn(begin, end) over [0, n) in at most hardware_concurrency() contiguous ranges of at
// least min_items_per_range items each (one range, on the calling thread, when n is smaller).
template <class Fn>
void parallel_rows(int64_t n, int64_t min_items_per_range, Fn&& fn) {
  const int64_t n_hw = std::max<int64_t>(1, int64_t(std::thread::hardware_concurrency()));
  const int64_t n_ranges = std::clamp<int64_t>(n / std::max<int64_t>(1, min_items_per_range), 1, n_hw);
  if (n_ranges <= 1) {
    if (n > 0) fn(int64_t(0), n);
    return;
  }
  const int64_t chunk = (n + n_ranges - 1) / n_ranges;
  std::vector<std::thread> pool;
  for (int64_t b = chunk; b < n; b += chunk) pool.emplace_back([&fn, b, e = std::min(n, b + chunk)] { fn(b, e); });
  fn(int64_t(0), std::min(n, chunk));
  for (std::thread& t : pool) t.join();
}

}  // namespace seam
