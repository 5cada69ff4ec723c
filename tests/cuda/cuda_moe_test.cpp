// The CUDA mixture-of-experts ops against the CPU reference (backend.h, "mixture of experts"):
// routing (softmax, top-k with lower ids first on ties, renormalisation) in one kernel, the
// gathered-GEMV experts accumulated into the residual, the gated shared expert; every
// activation dtype, vectorised and scalar shapes, padded rows, and a captured graph replayed
// for new routing (the counts and ids are read from device memory, never baked); the gathered
// small-batch path and the grouped large-batch path.
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
#include "moe_paths_fixture.h"

namespace seam::test {
namespace {

const DType kDtypes[] = {DType::f32, DType::f16, DType::bf16};

struct ExpertCase {
  int64_t n, n_experts, inter, hidden, k;
};

std::string trace(DType t, const ExpertCase& c) {
  return std::string(short_name(t)) + " n " + std::to_string(c.n) + " experts " + std::to_string(c.n_experts) +
         " inter " + std::to_string(c.inter) + " hidden " + std::to_string(c.hidden) + " k " + std::to_string(c.k);
}

// A case's host inputs, rounded to the activation dtype: gate-up [E, 2I, H] and down [E, H, I]
// weights, x and the residual out [n, H], and the routing: k distinct experts a row, ids and
// weights [n, k].
struct ExpertInputs {
  std::vector<float> gu, dn, x, out, w;
  std::vector<int32_t> ids;
};

// Random inputs; with `skew`, even rows take their first expert among the first two, so those
// experts' groups span several tiles while some experts stay empty.
ExpertInputs random_expert_inputs(const ExpertCase& c, DType t, std::mt19937& rng, bool skew) {
  const int64_t n = c.n, E = c.n_experts, I = c.inter, H = c.hidden, k = c.k;
  ExpertInputs in;
  in.gu = round_to(random_normal(size_t(E * 2 * I * H), rng, 0.1f), t);
  in.dn = round_to(random_normal(size_t(E * H * I), rng, 0.1f), t);
  in.x = round_to(random_normal(size_t(n * H), rng), t);
  in.out = round_to(random_normal(size_t(n * H), rng), t);
  in.ids.resize(size_t(n * k));
  in.w.resize(size_t(n * k));
  std::uniform_int_distribution<int32_t> pick(0, int32_t(E - 1));
  std::uniform_real_distribution<float> weight(0.05f, 1.f);
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int32_t> row;
    while (int64_t(row.size()) < k) {
      int32_t e = pick(rng);
      if (skew && i % 2 == 0 && row.empty()) e = int32_t(i % std::min<int64_t>(2, E));
      if (std::find(row.begin(), row.end(), e) == row.end()) row.push_back(e);
    }
    std::copy(row.begin(), row.end(), in.ids.begin() + i * k);
    for (int64_t j = 0; j < k; ++j) in.w[size_t(i * k + j)] = weight(rng);
  }
  return in;
}

class CudaMoe : public CudaTest {
 protected:
  // gpu->moe_experts on `in` with `scratch` (act [n * k, I] and, for the grouped path, its
  // scratch), against the cpu reference; bf16/f16 round act (and, grouped, each expert's
  // output) once more than the cpu's float32 reference.
  void expect_experts_match(const ExpertCase& c, DType t, ExpertInputs& in, const MoeScratch& scratch,
                            const char* what) {
    const int64_t n = c.n, E = c.n_experts, I = c.inter, H = c.hidden, k = c.k;
    Tensor gu = upload(in.gu, t, {E, 2 * I, H}), dn = upload(in.dn, t, {E, H, I});
    Tensor x = upload(in.x, t, {n, H}), out = upload(in.out, t, {n, H});
    Tensor ids = upload_index(in.ids, {n, k}), w = upload(in.w, DType::f32, {n, k});
    gpu->moe_experts(out, x, gu, dn, ids, w, scratch);
    std::vector<float> ref = in.out, act_ref(size_t(n * k * I));
    cpu.moe_experts(host_view(ref, {n, H}), host_view(in.x, {n, H}), host_view(in.gu, {E, 2 * I, H}),
                    host_view(in.dn, {E, H, I}), host_index(in.ids, {n, k}), host_view(in.w, {n, k}),
                    MoeScratch{host_view(act_ref, {n * k, I}), Tensor(), Tensor()});
    expect_close(download(out), ref, tolerance_for(t, {1e-5, 1e-6}, {1e-2, 1e-2}, {3e-2, 3e-2}), what);
  }
};

TEST_F(CudaMoe, RouteMatchesTheCpuReference) {
  for (DType t : kDtypes) {
    for (auto [n_experts, k, renorm] :
         {std::tuple{8, 2, true}, std::tuple{60, 4, false}, std::tuple{128, 8, true}, std::tuple{300, 3, false},
          std::tuple{256, 32, false}, std::tuple{33, 6, true}, std::tuple{200, 33, true}}) {
      SCOPED_TRACE(std::string(short_name(t)) + " experts " + std::to_string(n_experts) + " k " + std::to_string(k));
      const int64_t n = 37;
      auto logits_h = round_to(random_normal(size_t(n * n_experts), rng, 2.f), t);
      for (int e = 0; e < n_experts; ++e) logits_h[size_t(e)] = NAN;  // row 0: a poisoned padded row
      Tensor logits = upload(logits_h, t, {n, n_experts});
      Tensor ids = empty(DType::i32, {n, k});
      Tensor w = empty(DType::f32, {n, k});
      gpu->moe_route(ids, w, logits, renorm);
      std::vector<int32_t> ref_ids(size_t(n * k));
      std::vector<float> ref_w(size_t(n * k));
      cpu.moe_route(host_index(ref_ids, {n, k}), host_view(ref_w, {n, k}), host_view(logits_h, {n, n_experts}), renorm);
      const auto got_ids = download_i32(ids);
      const auto got_w = download(w);
      for (int64_t i = 1; i < n; ++i)
        for (int j = 0; j < k; ++j) {
          const size_t at = size_t(i * k + j);
          ASSERT_EQ(got_ids[at], ref_ids[at]) << "row " << i << " rank " << j;
          ASSERT_NEAR(got_w[at], ref_w[at], 2e-6 * std::max(1.f, std::fabs(ref_w[at]))) << "row " << i;
        }
      std::vector<int32_t> row0(got_ids.begin(), got_ids.begin() + k);
      for (int32_t e : row0) EXPECT_TRUE(e >= 0 && e < n_experts) << e;
      std::sort(row0.begin(), row0.end());
      EXPECT_EQ(std::unique(row0.begin(), row0.end()), row0.end()) << "the padded row repeats an expert";
    }
  }
}

TEST_F(CudaMoe, RouteTiesPickTheLowerId) {
  std::vector<float> logits_h = {1.f, 3.f, 0.5f, 3.f, 3.f, -1.f};
  Tensor logits = upload(logits_h, DType::bf16, {1, 6});
  Tensor ids = empty(DType::i32, {1, 3});
  Tensor w = empty(DType::f32, {1, 3});
  gpu->moe_route(ids, w, logits, true);
  EXPECT_EQ(download_i32(ids), (std::vector<int32_t>{1, 3, 4}));
}

TEST_F(CudaMoe, ExpertsMatchTheCpuReference) {
  for (DType t : kDtypes) {
    // Vectorised (hidden, inter multiples of 8), scalar (odd widths), Qwen3-MoE-like top-8.
    for (ExpertCase c : {ExpertCase{1, 8, 32, 64, 2}, ExpertCase{5, 8, 32, 64, 2}, ExpertCase{64, 16, 48, 128, 4},
                         ExpertCase{3, 128, 96, 256, 8}, ExpertCase{4, 5, 13, 37, 2}}) {
      SCOPED_TRACE(trace(t, c));
      ExpertInputs in = random_expert_inputs(c, t, rng, false);
      if (c.n > 1) in.ids[size_t(c.k)] = -3;  // a padded row's garbage id reads expert 0, as on the cpu
      expect_experts_match(c, t, in, MoeScratch{empty(t, {c.n * c.k, c.inter}), Tensor(), Tensor()}, "moe_experts");
    }
  }
}

// The large-batch path (the grouping scratch given, 16-bit, more than 8 row-expert slots an expert
// on average): rows grouped by expert from device-side counts, grouped GEMMs, combined in order.
TEST_F(CudaMoe, GroupedPathMatchesTheCpuReference) {
  for (DType t : {DType::f16, DType::bf16}) {
    for (ExpertCase c : {ExpertCase{64, 16, 48, 128, 4}, ExpertCase{300, 128, 96, 256, 8},
                         ExpertCase{130, 8, 200, 72, 2}, ExpertCase{257, 4, 64, 64, 1},
                         ExpertCase{1100, 16, 32, 64, 8}}) {  // 8800 slots: two rounds of the align kernel
      SCOPED_TRACE(trace(t, c));
      const int64_t n = c.n, E = c.n_experts, I = c.inter, H = c.hidden, k = c.k;
      ExpertInputs in = random_expert_inputs(c, t, rng, true);
      in.ids[size_t(k)] = 1000;  // a padded row's garbage id reads expert 0, as on the cpu
      MoeScratch scratch{empty(t, {n * k, I}), empty(t, {n * k, H}), empty(DType::i32, {2 * E + 2 + n * k})};
      expect_experts_match(c, t, in, scratch, "grouped");
      // The grouping: per-expert offsets and every slot exactly once, sorted by expert.
      const auto index = download_i32(scratch.index);
      std::vector<int> count(size_t(E), 0);
      for (int64_t s = 0; s < n * k; ++s) {
        const int32_t e = in.ids[size_t(s)];
        ++count[size_t(e < 0 || e >= E ? 0 : e)];
      }
      for (int64_t e = 0, o = 0; e < E; o += count[size_t(e)], ++e) ASSERT_EQ(index[size_t(e)], o) << "offset " << e;
      std::vector<int32_t> sorted(index.begin() + 2 * E + 2, index.begin() + 2 * E + 2 + n * k);
      std::sort(sorted.begin(), sorted.end());
      for (int64_t s = 0; s < n * k; ++s) ASSERT_EQ(sorted[size_t(s)], s);
    }
  }
}

TEST_F(CudaMoe, SharedExpertAddMatchesTheCpuReference) {
  for (DType t : kDtypes) {
    const int64_t n = 9, H = 72;
    auto out_h = round_to(random_normal(size_t(n * H), rng), t), y_h = round_to(random_normal(size_t(n * H), rng), t);
    auto g_h = round_to(random_normal(size_t(n), rng, 2.f), t);
    Tensor out = upload(out_h, t, {n, H}), y = upload(y_h, t, {n, H}), g = upload(g_h, t, {n, 1});
    gpu->moe_shared_expert_add(out, y, g);
    cpu.moe_shared_expert_add(host_view(out_h, {n, H}), host_view(y_h, {n, H}), host_view(g_h, {n, 1}));
    expect_close(download(out), out_h, tolerance_for(t), short_name(t));
  }
}

// One capture of route + experts replays for any routing: new logits each replay, the result
// equal to the eager ops on the same inputs; 8 rows take the skinny path, 96 the grouped path.
class CudaMoeGraph : public CudaTest, public ::testing::WithParamInterface<int64_t> {};

TEST_P(CudaMoeGraph, CapturedLayerReplaysForNewRouting) {
  const DType t = DType::bf16;
  const int64_t n = GetParam(), E = 32, I = 64, H = 128, k = 4;
  auto gu_h = round_to(random_normal(size_t(E * 2 * I * H), rng, 0.1f), t);
  auto dn_h = round_to(random_normal(size_t(E * H * I), rng, 0.1f), t);
  auto x_h = round_to(random_normal(size_t(n * H), rng), t);
  Tensor gu = upload(gu_h, t, {E, 2 * I, H}), dn = upload(dn_h, t, {E, H, I}), x = upload(x_h, t, {n, H});
  Tensor logits = empty(t, {n, E}), ids = empty(DType::i32, {n, k}), w = empty(DType::f32, {n, k});
  MoeScratch scratch{empty(t, {n * k, I}), empty(t, {n * k, H}), empty(DType::i32, {2 * E + 2 + n * k})};
  Tensor out = empty(t, {n, H});
  auto layer = [&] {
    gpu->fill(out, 0.f);
    gpu->moe_route(ids, w, logits, true);
    gpu->moe_experts(out, x, gu, dn, ids, w, scratch);
  };
  gpu->begin_capture();
  layer();
  auto graph = gpu->end_capture();
  for (int step = 0; step < 3; ++step) {
    const auto l_h = round_to(random_normal(size_t(n * E), rng, 2.f), t);
    write(logits, l_h);
    gpu->replay(*graph);
    const auto replayed = download(out);
    const auto replayed_ids = download_i32(ids);
    layer();
    EXPECT_EQ(download_i32(ids), replayed_ids) << "step " << step;
    // Rows are computed on their own in either path; the grouped path's order inside a group
    // (atomics) may move a row within its tile, so compare within one bf16 rounding.
    expect_close(download(out), replayed, {8e-3, 1e-3}, "replay vs eager, step " + std::to_string(step));
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, CudaMoeGraph, ::testing::Values(int64_t(8), int64_t(96)));

// Each path against the CPU reference at the batch sizes the decode buckets meet, on a Qwen3-MoE-like
// shape (top-4 of 32: most experts empty at few rows), a Mixtral-like one (top-2 of 8; widths
// that leave partial sweeps and tiles: hidden 72 = 9 vectors, inter 200 = 25; not whole 32-k mma
// chunks, so skinny_mma does not apply) and one for the mma's K split (hidden 2080 = 65 chunks:
// 9 a warp in three groups of 3, the last warp 2; inter 96 = 3 chunks: five warps idle; a gate/up
// tile of 65 KB, above the whole-tile L2 prefetch, so the warps prefetch ahead instead; for
// skinny_mma_stream odd chunk counts: each tile's last ring step is half, and inter 96 leaves
// 12 gate/up tiles (3 blocks of 4 warps) and hidden 2080 130 down tiles of 16 (two a warp, 17
// blocks): the last block's first warp has the last two, its other three warps none).
// The streaming and skinny paths are also run twice: bit-identical (fixed slot and sum order).
TEST_F(CudaMoePaths, EveryPathMatchesTheCpuReference) {
  for (PathCase c : {PathCase{32, 64, 128, 4}, PathCase{8, 200, 72, 2}, PathCase{8, 96, 2080, 2}}) {
    const int64_t E = c.n_experts, I = c.inter, H = c.hidden, k = c.k;
    for (DType t : {DType::f16, DType::bf16}) {
      auto gu_h = round_to(random_normal(size_t(E * 2 * I * H), rng, 0.1f), t);
      auto dn_h = round_to(random_normal(size_t(E * H * I), rng, 0.1f), t);
      Tensor gu = upload(gu_h, t, {E, 2 * I, H}), dn = upload(dn_h, t, {E, H, I});
      for (int64_t n : kRowCounts) {
        auto x_h = round_to(random_normal(size_t(n * H), rng), t);
        auto out_h = round_to(random_normal(size_t(n * H), rng), t);
        std::vector<int32_t> ids_h;
        std::vector<float> w_h;
        random_routing(rng, n, E, k, ids_h, w_h);
        Tensor x = upload(x_h, t, {n, H});
        Tensor ids = upload_index(ids_h, {n, k}), w = upload(w_h, DType::f32, {n, k});
        const std::vector<float> ref = cpu_experts(out_h, x_h, gu_h, dn_h, ids_h, w_h, n, c);
        for (cuda::MoePath path : kPaths) {
          SCOPED_TRACE(std::string(cuda::moe_path_name(path)) + " " + short_name(t) + " n " + std::to_string(n) +
                       " experts " + std::to_string(E) + " k " + std::to_string(k));
          const MoeScratch s = scratch(t, n, c);
          const bool whole_chunks = I % 32 == 0 && H % 32 == 0;
          ASSERT_EQ(cuda::moe_path_applies(path, x, gu, dn, ids, s), !needs_whole_chunks(path) || whole_chunks);
          if (!cuda::moe_path_applies(path, x, gu, dn, ids, s)) continue;
          Tensor out = upload(out_h, t, {n, H});
          cuda::launch_moe_experts_path(path, out, x, gu, dn, ids, w, s, stream());
          const auto got = download(out);
          // act (and in the grouped paths each expert's output) is rounded once more than the cpu's float32.
          expect_close(got, ref, tolerance_for(t, {1e-5, 1e-6}, {1e-2, 1e-2}, {3e-2, 3e-2}), "vs cpu");
          if (path != cuda::MoePath::gathered && path != cuda::MoePath::grouped) {
            Tensor again = upload(out_h, t, {n, H});
            cuda::launch_moe_experts_path(path, again, x, gu, dn, ids, w, scratch(t, n, c), stream());
            EXPECT_EQ(download(again), got) << "not deterministic";
          }
        }
      }
    }
  }
}

// The rule on the measured shapes (no data: the rule reads shapes and alignment only), with
// the diagnostic switches unset: one row runs on the dense GEMV kernel (gathered_gemv, both
// shapes), up to 4 slots an expert go skinny
// (on tensor cores, the streamed kernels: both shapes are whole 32-k chunks), more group. The
// scratch has MoeBuffers' rows for a step of up to 256 tokens.
TEST(MoePathRule, PicksByRowsAnExpert) {
  for (const char* var :
       {"SEAM_MOE_GROUPED", "SEAM_MOE_SKINNY", "SEAM_MOE_SKINNY_MMA", "SEAM_MOE_GATHER_STREAM", "SEAM_MOE_GATHER_GEMV"})
    if (const char* v = std::getenv(var); v != nullptr && *v != '\0')
      GTEST_SKIP() << var << " is set: not the default rule";
  auto fake = [](DType t, std::initializer_list<int64_t> dims) {
    return Tensor(reinterpret_cast<void*>(uintptr_t(1) << 20), t, Device::cuda, dims);
  };
  for (auto [E, I, H, k, skinny_max_rows, one_row] :
       {std::tuple{128, 768, 2048, 8, 64, cuda::MoePath::gathered_gemv},
        std::tuple{8, 14336, 4096, 2, 16, cuda::MoePath::gathered_gemv}}) {
    auto pick = [&](int64_t n) {
      const Tensor gu = fake(DType::bf16, {E, 2 * I, H}), dn = fake(DType::bf16, {E, H, I});
      const Tensor x = fake(DType::bf16, {n, H}), ids = fake(DType::i32, {n, k});
      const int64_t max_tokens = std::max<int64_t>(n, 256);
      const MoeScratch s{fake(DType::bf16, {max_tokens * k, I}), fake(DType::bf16, {max_tokens * k, H}),
                         fake(DType::i32, {2 * E + 2 + max_tokens * k})};
      return cuda::choose_moe_path(x, gu, dn, ids, s);
    };
    SCOPED_TRACE("experts " + std::to_string(E));
    EXPECT_EQ(pick(1), one_row);
    EXPECT_EQ(pick(2), cuda::MoePath::skinny_mma_stream);
    EXPECT_EQ(pick(skinny_max_rows), cuda::MoePath::skinny_mma_stream);
    EXPECT_EQ(pick(skinny_max_rows + 1), cuda::MoePath::grouped);
    EXPECT_EQ(pick(4096), cuda::MoePath::grouped);
  }
}

}  // namespace
}  // namespace seam::test
