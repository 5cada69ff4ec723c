// The fixture and inputs of the moe_experts path tests (cuda_moe_test.cpp, cuda_moe_paths_test.cpp):
// every path launched directly whatever the rule picks, routing that leaves experts empty and
// crowds others, a padded row, and the scratch as the model allocates it.
#pragma once
#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <tuple>

#include "backend/cuda/attention_prefill_wgmma.h"
#include "backend/cuda/moe_experts.h"
#include "backend/cuda/moe_experts_grouped.h"
#include "backend/cuda/moe_skinny_mma_stream.h"
#include "cuda_test_util.h"

namespace seam::test {

// ---- every path of moe_experts, launched directly whatever the rule picks ----

inline constexpr cuda::MoePath kPaths[] = {
    cuda::MoePath::gathered,   cuda::MoePath::gathered_stream,   cuda::MoePath::gathered_gemv, cuda::MoePath::skinny,
    cuda::MoePath::skinny_mma, cuda::MoePath::skinny_mma_stream, cuda::MoePath::grouped};

// The tensor-core skinny paths: whole 32-k chunks only.
inline bool needs_whole_chunks(cuda::MoePath p) {
  return p == cuda::MoePath::skinny_mma || p == cuda::MoePath::skinny_mma_stream;
}
inline constexpr int64_t kRowCounts[] = {1, 2, 7, 16, 64, 200};

// Routing of n rows over E experts, k distinct each: rows i % 3 == 0 put expert i % 2 first, so
// two experts collect many rows (several 8- and 16-slot passes at 200 rows) and, at few rows, most
// experts have none; row 1 (when n > 1) is a padded row whose garbage id must read expert 0.
inline void random_routing(std::mt19937& rng, int64_t n, int64_t E, int64_t k, std::vector<int32_t>& ids,
                           std::vector<float>& w) {
  ids.assign(size_t(n * k), 0);
  w.assign(size_t(n * k), 0.f);
  std::uniform_int_distribution<int32_t> pick(0, int32_t(E - 1));
  std::uniform_real_distribution<float> weight(0.05f, 1.f);
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int32_t> row;
    while (int64_t(row.size()) < k) {
      int32_t e = pick(rng);
      if (i % 3 == 0 && row.empty()) e = int32_t(i % 2);
      if (std::find(row.begin(), row.end(), e) == row.end()) row.push_back(e);
    }
    std::copy(row.begin(), row.end(), ids.begin() + i * k);
    for (int64_t j = 0; j < k; ++j) w[size_t(i * k + j)] = weight(rng);
  }
  if (n > 1) ids[size_t(k)] = int32_t(E + 5);
}

struct PathCase {
  int64_t n_experts, inter, hidden, k;
};

class CudaMoePaths : public CudaTest {
 protected:
  cudaStream_t stream() { return static_cast<cudaStream_t>(cuda_backend_stream(*gpu)); }
  // Scratch as the model allocates it (MoeBuffers): act, expert_out, index; poisoned (NaN), so a
  // slot a path forgets to write shows. expert_out has the rows of twice n tokens, as MoeBuffers'
  // max_tokens rows have for a smaller step: room for gathered_gemv's float32 expert outputs.
  MoeScratch scratch(DType t, int64_t n, const PathCase& c) {
    return MoeScratch{empty(t, {n * c.k, c.inter}), empty(t, {2 * n * c.k, c.hidden}),
                      empty(DType::i32, {2 * c.n_experts + 2 + n * c.k})};
  }
};

// Fast distinct weights for the full-size case (600M values: std::normal_distribution would take
// most of a minute): uniform in [-scale, scale] from splitmix64, rounded to t.
inline std::vector<float> fast_uniform(size_t n, uint64_t seed, float scale, DType t = DType::f32) {
  std::vector<float> v(n);
  uint64_t z = seed;
  for (auto& x : v) {
    uint64_t r = (z += 0x9e3779b97f4a7c15ull);
    r = (r ^ (r >> 30)) * 0xbf58476d1ce4e5b9ull;
    r = (r ^ (r >> 27)) * 0x94d049bb133111ebull;
    r ^= r >> 31;
    x = scale * (float(r >> 40) * (2.f / 16777216.f) - 1.f);
  }
  return round_to(v, t);
}

}  // namespace seam::test
