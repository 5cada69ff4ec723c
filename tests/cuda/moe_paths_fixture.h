// The fixture and inputs of the moe_experts path tests (cuda_moe_test.cpp, cuda_moe_paths_test.cpp):
// every path launched directly whatever the rule picks, routing that leaves experts empty and
// crowds others, a padded row, and the scratch as the model allocates it.
#pragma once
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <utility>

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

// Skewed decode routing for top-2 of 8 (the skinny tests' uneven case): every row's first expert
// is 3 (one expert holds all rows), its second 5 or 6; experts 1, 2, 4 and 7 get none; row 1's
// first id is garbage, read as expert 0.
inline void uneven_routing(std::mt19937& rng, int64_t n, int64_t E, int64_t k, std::vector<int32_t>& ids) {
  std::uniform_int_distribution<int> coin(0, 1);
  for (int64_t i = 0; i < n; ++i) {
    ids[size_t(i * k)] = 3;
    ids[size_t(i * k + 1)] = 5 + coin(rng);
  }
  if (n > 1) ids[size_t(k)] = int32_t(E + 5);
}

struct PathCase {
  int64_t n_experts, inter, hidden, k;
};

class CudaMoePaths : public CudaTest {
 protected:
  // Scratch as the model allocates it (MoeBuffers): act, expert_out, index; poisoned (NaN), so a
  // slot a path forgets to write shows. expert_out has the rows of twice n tokens, as MoeBuffers'
  // max_tokens rows have for a smaller step: room for gathered_gemv's float32 expert outputs.
  MoeScratch scratch(DType t, int64_t n, const PathCase& c) {
    return MoeScratch{empty(t, {n * c.k, c.inter}), empty(t, {2 * n * c.k, c.hidden}),
                      empty(DType::i32, {2 * c.n_experts + 2 + n * c.k})};
  }
  // The CPU definition (backend.h, "mixture of experts"): out0 plus the chosen experts' weighted
  // sum for n rows of x, with gate-up [E, 2I, H] and down [E, H, I] weights and ids / w [n, k].
  std::vector<float> cpu_experts(std::vector<float> out0, std::vector<float>& x, std::vector<float>& gu,
                                 std::vector<float>& dn, std::vector<int32_t>& ids, std::vector<float>& w, int64_t n,
                                 const PathCase& c) {
    const int64_t E = c.n_experts, I = c.inter, H = c.hidden, k = c.k;
    std::vector<float> act(size_t(n * k * I));
    cpu.moe_experts(host_view(out0, {n, H}), host_view(x, {n, H}), host_view(gu, {E, 2 * I, H}),
                    host_view(dn, {E, H, I}), host_index(ids, {n, k}), host_view(w, {n, k}),
                    MoeScratch{host_view(act, {n * k, I}), Tensor(), Tensor()});
    return out0;
  }
  // A decode batch of n rows for the skinny paths' tests: x and the residual out [n, H] rounded to
  // t, the routing (random_routing, then uneven_routing where `uneven`), uploaded, and the CPU
  // definition's result for them (weights gu_h [E, 2I, H], dn_h [E, H, I]).
  struct SkinnyBatch {
    std::vector<float> out_h, ref;
    Tensor x, ids, w;
  };
  SkinnyBatch skinny_batch(DType t, int64_t n, const PathCase& c, bool uneven, std::vector<float>& gu_h,
                           std::vector<float>& dn_h) {
    const int64_t E = c.n_experts, H = c.hidden, k = c.k;
    auto x_h = round_to(random_normal(size_t(n * H), rng), t);
    auto out_h = round_to(random_normal(size_t(n * H), rng), t);
    std::vector<int32_t> ids_h;
    std::vector<float> w_h;
    random_routing(rng, n, E, k, ids_h, w_h);
    if (uneven) uneven_routing(rng, n, E, k, ids_h);
    SkinnyBatch b;
    b.x = upload(x_h, t, {n, H});
    b.ids = upload_index(ids_h, {n, k});
    b.w = upload(w_h, DType::f32, {n, k});
    b.ref = cpu_experts(out_h, x_h, gu_h, dn_h, ids_h, w_h, n, c);
    b.out_h = std::move(out_h);
    return b;
  }
  // Route + `experts` (the launch under test, into out from the routed ids and weights) captured
  // once on n rows of x, then replayed `steps` times for fresh router logits (scale 2; `skew` may
  // bend a step's [n, E] logits toward some experts). Each replay equals the CPU definition for the
  // routing it produced (`check_ids` may inspect that routing); with `eager_equal`, the layer run
  // eagerly right after routes the same and equals the replay bit for bit.
  void check_replays(DType t, int64_t n, const PathCase& c, std::vector<float>& x_h, Tensor x, std::vector<float>& gu_h,
                     std::vector<float>& dn_h, int steps,
                     const std::function<void(int step, std::vector<float>& logits)>& skew,
                     const std::function<void(Tensor out, Tensor ids, Tensor w, const MoeScratch& s)>& experts,
                     bool eager_equal,
                     const std::function<void(int step, const std::vector<int32_t>& ids)>& check_ids = {}) {
    const int64_t E = c.n_experts, H = c.hidden, k = c.k;
    Tensor logits = empty(t, {n, E}), ids = empty(DType::i32, {n, k}), w = empty(DType::f32, {n, k});
    const MoeScratch s = scratch(t, n, c);
    Tensor out = empty(t, {n, H});
    auto layer = [&] {
      gpu->fill(out, 0.f);
      gpu->moe_route(ids, w, logits, true);
      experts(out, ids, w, s);
    };
    gpu->begin_capture();
    layer();
    auto graph = gpu->end_capture();
    for (int step = 0; step < steps; ++step) {
      auto l_h = round_to(random_normal(size_t(n * E), rng, 2.f), t);
      skew(step, l_h);
      write(logits, l_h);
      gpu->replay(*graph);
      const auto replayed = download(out);
      auto ids_h = download_i32(ids);
      auto w_h = download(w);
      if (check_ids) check_ids(step, ids_h);
      expect_close(replayed, cpu_experts(std::vector<float>(size_t(n * H), 0.f), x_h, gu_h, dn_h, ids_h, w_h, n, c),
                   {3e-2, 3e-2}, "replay vs cpu, step " + std::to_string(step));
      if (!eager_equal) continue;
      layer();
      EXPECT_EQ(download_i32(ids), ids_h) << "step " << step;
      EXPECT_EQ(download(out), replayed) << "replay vs eager, step " << step;
    }
  }
};

// Skews a step's router logits [n, E]: on step `at`, every row prefers experts [first, first + count)
// (+20), so those experts take all n rows and the rest none.
inline std::function<void(int, std::vector<float>&)> prefer_experts(int at, int64_t E, int64_t first, int64_t count) {
  return [=](int step, std::vector<float>& l) {
    if (step != at) return;
    for (size_t i = 0; i < l.size() / size_t(E); ++i)
      for (int64_t e = first; e < first + count; ++e) l[i * size_t(E) + size_t(e)] += 20.f;
  };
}

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
