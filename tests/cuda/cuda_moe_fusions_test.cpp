// The batch-1 mixture-of-experts fusions against the ops they replace, bit for bit, and against
// the CPU definition: moe_router_route (the router GEMV's last block routes: no moe_route
// launch) and moe_norm_router_route (the router GEMV also normalises and writes normed: no
// rms_norm launch); and moe_experts' one-row path with the combine folded into the down GEMV (its
// last block per output tile adds the tile: no moe_combine launch). Each at Qwen3-30B-A3B's shape (128 experts, top-8, hidden 2048), Mixtral's (8, top-2,
// hidden 4096), Qwen1.5-MoE's (60, top-4, no renorm) and a wide one (256, top-32), at 1, 2 and 4
// rows and at 64 (where the fusion must not apply), eager and inside a captured graph replayed
// with new inputs. The fused kernels are counted, so a test fails if the fusion silently stops
// applying at one row or applies where it must not. The backend's switches for these fusions
// (SEAM_MOE_FUSED_ROUTE, SEAM_MOE_FUSED_COMBINE) default to 0 (correct on the H200, measured
// slower end to end), so the fixture sets them to 1 before it creates
// the backend and unsets them after.
#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/gemv.h"
#include "backend/cuda/gemv_experts.h"
#include "backend/cuda/moe_experts.h"
#include "cuda_test_util.h"

namespace seam::test {
namespace {

struct RouterCase {
  const char* name;
  int64_t n_experts, hidden, k;
  bool renormalize;
};
const RouterCase kRouterCases[] = {{"qwen3-30b-a3b", 128, 2048, 8, true},
                                   {"mixtral", 8, 4096, 2, true},
                                   {"qwen1.5-moe", 60, 2048, 4, false},
                                   {"wide", 256, 1024, 32, true}};
const int64_t kRows[] = {1, 2, 4, 64};

// Whether a diagnostic switch that changes the path is set (the launch counts then differ). The
// fusions' own switches are not among them: the fixture sets those to 1.
bool switch_set(const char* var) {
  const char* v = std::getenv(var);
  return v != nullptr && *v != '\0';
}
bool route_fusion_switched() { return switch_set("SEAM_MOE_ROUTE_WARP"); }
// The backend's switches for the fusions under test (default 0 until they have run on a GPU).
const char* const kFusionSwitches[] = {"SEAM_MOE_FUSED_ROUTE", "SEAM_MOE_FUSED_COMBINE"};

std::string trace(DType t, const RouterCase& c, int64_t n) {
  return std::string(short_name(t)) + " " + c.name + " n " + std::to_string(n);
}

class CudaMoeFusions : public CudaTest {
 protected:
  // The fusions on for this fixture's backend (read at its construction), off again after.
  void SetUp() override {
    for (const char* v : kFusionSwitches) setenv(v, "1", 1);
    CudaTest::SetUp();
  }
  void TearDown() override {
    CudaTest::TearDown();
    for (const char* v : kFusionSwitches) unsetenv(v);
  }
  // One routing's outputs on the device.
  struct Routing {
    Tensor logits, ids, weights;  // [n, E] x's dtype, [n, k] i32, [n, k] f32
  };
  Routing routing(DType t, int64_t n, const RouterCase& c) {
    return {empty(t, {n, c.n_experts}), empty(DType::i32, {n, c.k}), empty(DType::f32, {n, c.k})};
  }
  // The decomposition moe_router_route stands for: linear, then moe_route.
  void decomposed(const Routing& r, const Tensor& x, const Tensor& w, bool renormalize) {
    gpu->linear(r.logits, x, w, Tensor());
    gpu->moe_route(r.ids, r.weights, r.logits, renormalize);
  }
  void expect_same(const Routing& got, const Routing& want, const std::string& what) {
    EXPECT_EQ(download(got.logits), download(want.logits)) << what << ": logits";
    EXPECT_EQ(download_i32(got.ids), download_i32(want.ids)) << what << ": ids";
    EXPECT_EQ(download(got.weights), download(want.weights)) << what << ": weights";
  }
  // The CPU definition on the host copies: the logits within the product's rounding, and the
  // routing of the device's logits exactly (ids) / to float rounding (weights), as cuda_moe_test.
  void expect_cpu_definition(const Routing& got, std::vector<float>& x_h, std::vector<float>& w_h, DType t,
                             int64_t n, const RouterCase& c) {
    const int64_t E = c.n_experts, H = c.hidden, k = c.k;
    std::vector<float> ref_logits(size_t(n * E)), ref_w(size_t(n * k));
    std::vector<int32_t> ref_ids(size_t(n * k));
    cpu.moe_router_route(host_index(ref_ids, {n, k}), host_view(ref_w, {n, k}), host_view(ref_logits, {n, E}),
                         host_view(x_h, {n, H}), host_view(w_h, {E, H}), c.renormalize);
    auto logits = download(got.logits);
    expect_close(logits, ref_logits, tolerance_for(t), "logits vs cpu");
    cpu.moe_route(host_index(ref_ids, {n, k}), host_view(ref_w, {n, k}), host_view(logits, {n, E}), c.renormalize);
    const auto ids = download_i32(got.ids);
    const auto w = download(got.weights);
    for (size_t i = 0; i < ids.size(); ++i) {
      ASSERT_EQ(ids[i], ref_ids[i]) << "slot " << i;
      ASSERT_NEAR(w[i], ref_w[i], 2e-6 * std::max(1.f, std::fabs(ref_w[i]))) << "slot " << i;
    }
  }
};

TEST_F(CudaMoeFusions, RouterRouteEqualsLinearThenRoute) {
  for (DType t : {DType::bf16, DType::f16}) {
    for (const RouterCase& c : kRouterCases) {
      for (int64_t n : kRows) {
        SCOPED_TRACE(trace(t, c, n));
        const int64_t E = c.n_experts, H = c.hidden;
        auto x_h = round_to(random_normal(size_t(n * H), rng), t);
        auto w_h = round_to(random_normal(size_t(E * H), rng, 0.05f), t);
        Tensor x = upload(x_h, t, {n, H}), w = upload(w_h, t, {E, H});
        Routing fused = routing(t, n, c), want = routing(t, n, c);
        const int64_t before = cuda::gemv_route_launches();
        gpu->moe_router_route(fused.ids, fused.weights, fused.logits, x, w, c.renormalize);
        if (!route_fusion_switched()) EXPECT_EQ(cuda::gemv_route_launches() - before, n == 1 ? 1 : 0);
        decomposed(want, x, w, c.renormalize);
        expect_same(fused, want, "fused vs linear + moe_route");
        expect_cpu_definition(fused, x_h, w_h, t, n, c);
      }
    }
  }
}

// Equal logits (identical router rows) route lower ids first in the fused tail as in moe_route.
TEST_F(CudaMoeFusions, RouterRouteTiesPickTheLowerId) {
  const DType t = DType::bf16;
  const int64_t E = 128, H = 2048, k = 8;
  auto x_h = round_to(random_normal(size_t(H), rng), t);
  auto w_h = round_to(random_normal(size_t(E * H), rng, 0.01f), t);
  for (int64_t e : {5, 17, 40, 99})  // four equal rows far above the rest: ranks 0..3
    for (int64_t h = 0; h < H; ++h) w_h[size_t(e * H + h)] = round_to({0.05f * x_h[size_t(h)]}, t)[0];
  Tensor x = upload(x_h, t, {1, H}), w = upload(w_h, t, {E, H});
  Routing fused = routing(t, 1, {"ties", E, H, k, true}), want = routing(t, 1, {"ties", E, H, k, true});
  gpu->moe_router_route(fused.ids, fused.weights, fused.logits, x, w, true);
  decomposed(want, x, w, true);
  expect_same(fused, want, "ties");
  const auto ids = download_i32(fused.ids);
  EXPECT_EQ(std::vector<int32_t>(ids.begin(), ids.begin() + 4), (std::vector<int32_t>{5, 17, 40, 99}));
}

// One capture replays for new inputs (x written between replays; the counter left zero by each
// replay): every step equal to the eager decomposition bit for bit.
TEST_F(CudaMoeFusions, CapturedRouterRouteReplaysForNewInputs) {
  const DType t = DType::bf16;
  for (const RouterCase& c : {kRouterCases[0], kRouterCases[1]}) {
    for (int64_t n : {int64_t(1), int64_t(4)}) {
      SCOPED_TRACE(trace(t, c, n));
      const int64_t E = c.n_experts, H = c.hidden;
      auto w_h = round_to(random_normal(size_t(E * H), rng, 0.05f), t);
      Tensor x = empty(t, {n, H}), w = upload(w_h, t, {E, H});
      Routing fused = routing(t, n, c), want = routing(t, n, c);
      const int64_t before = cuda::gemv_route_launches();
      gpu->begin_capture();
      gpu->moe_router_route(fused.ids, fused.weights, fused.logits, x, w, c.renormalize);
      auto graph = gpu->end_capture();
      if (!route_fusion_switched()) EXPECT_EQ(cuda::gemv_route_launches() - before, n == 1 ? 1 : 0);
      for (int step = 0; step < 4; ++step) {
        write(x, round_to(random_normal(size_t(n * H), rng), t));
        gpu->replay(*graph);
        decomposed(want, x, w, c.renormalize);
        expect_same(fused, want, "replay " + std::to_string(step));
      }
    }
  }
}

// moe_norm_router_route: normed written exactly as rms_norm writes it (the experts read it), and
// the logits, ids and weights of rms_norm + linear + moe_route, bit for bit; the CPU definition.
TEST_F(CudaMoeFusions, NormRouterRouteEqualsNormLinearRoute) {
  for (DType t : {DType::bf16, DType::f16}) {
    for (const RouterCase& c : kRouterCases) {
      for (int64_t n : kRows) {
        SCOPED_TRACE(trace(t, c, n));
        const int64_t E = c.n_experts, H = c.hidden;
        const float eps = 1e-6f;
        auto x_h = round_to(random_normal(size_t(n * H), rng, 3.f), t);
        auto g_h = round_to(random_normal(size_t(H), rng, 0.3f), t);
        for (float& g : g_h) g += 1.f;
        g_h = round_to(g_h, t);
        auto w_h = round_to(random_normal(size_t(E * H), rng, 0.05f), t);
        Tensor x = upload(x_h, t, {n, H}), g = upload(g_h, t, {H}), w = upload(w_h, t, {E, H});
        Tensor normed = empty(t, {n, H}), want_normed = empty(t, {n, H});
        Routing fused = routing(t, n, c), want = routing(t, n, c);
        const int64_t before = cuda::gemv_route_launches();
        gpu->moe_norm_router_route(fused.ids, fused.weights, fused.logits, normed, x, g, eps, w, c.renormalize);
        if (!route_fusion_switched()) EXPECT_EQ(cuda::gemv_route_launches() - before, n == 1 ? 1 : 0);
        gpu->rms_norm(want_normed, x, g, eps);
        decomposed(want, want_normed, w, c.renormalize);
        EXPECT_EQ(download(normed), download(want_normed)) << "normed";
        expect_same(fused, want, "fused vs rms_norm + linear + moe_route");
        // The CPU definition: normed to the norm's rounding, then the router as above on the
        // device's normed (so the logits' tolerance is the product's alone).
        std::vector<float> ref_normed(size_t(n * H));
        cpu.rms_norm(host_view(ref_normed, {n, H}), host_view(x_h, {n, H}), host_view(g_h, {H}), eps);
        auto got_normed = download(normed);
        expect_close(got_normed, ref_normed, tolerance_for(t), "normed vs cpu");
        expect_cpu_definition(fused, got_normed, w_h, t, n, c);
      }
    }
  }
}

// The norm-fused op captured once, replayed for new residuals: each replay equal to the eager
// rms_norm + linear + moe_route, bit for bit (normed included).
TEST_F(CudaMoeFusions, CapturedNormRouterRouteReplaysForNewInputs) {
  const DType t = DType::bf16;
  for (const RouterCase& c : {kRouterCases[0], kRouterCases[1]}) {
    for (int64_t n : {int64_t(1), int64_t(4)}) {
      SCOPED_TRACE(trace(t, c, n));
      const int64_t E = c.n_experts, H = c.hidden;
      auto w_h = round_to(random_normal(size_t(E * H), rng, 0.05f), t);
      auto g_h = round_to(random_normal(size_t(H), rng, 1.f), t);
      Tensor x = empty(t, {n, H}), g = upload(g_h, t, {H}), w = upload(w_h, t, {E, H});
      Tensor normed = empty(t, {n, H}), want_normed = empty(t, {n, H});
      Routing fused = routing(t, n, c), want = routing(t, n, c);
      const int64_t before = cuda::gemv_route_launches();
      gpu->begin_capture();
      gpu->moe_norm_router_route(fused.ids, fused.weights, fused.logits, normed, x, g, 1e-5f, w, c.renormalize);
      auto graph = gpu->end_capture();
      if (!route_fusion_switched()) EXPECT_EQ(cuda::gemv_route_launches() - before, n == 1 ? 1 : 0);
      for (int step = 0; step < 4; ++step) {
        write(x, round_to(random_normal(size_t(n * H), rng, 2.f), t));
        gpu->replay(*graph);
        gpu->rms_norm(want_normed, x, g, 1e-5f);
        decomposed(want, want_normed, w, c.renormalize);
        EXPECT_EQ(download(normed), download(want_normed)) << "replay " << step << ": normed";
        expect_same(fused, want, "replay " + std::to_string(step));
      }
    }
  }
}

// ---- the combine folded into the one-row experts' down GEMV ----

struct ExpertShape {
  const char* name;
  int64_t n_experts, inter, hidden, k;
};
// Qwen3-30B-A3B's experts; Mixtral's hidden and top-2 of 8 (its inter cut to 1,024 to keep the
// upload small); widths that leave partial sweeps and tiles (hidden 72 = 9 vectors, inter 200).
const ExpertShape kExpertShapes[] = {{"qwen3-30b-a3b", 128, 768, 2048, 8},
                                     {"mixtral-like", 8, 1024, 4096, 2},
                                     {"odd", 8, 200, 72, 2}};

// Cheap uniform values in [-scale, scale) (the Qwen3 shape's 1.2 G weight values; a normal
// generator would take most of the test's time).
std::vector<float> fast_values(size_t n, uint32_t seed, float scale) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 1u;
  for (float& x : v) {
    s ^= s << 13, s ^= s >> 17, s ^= s << 5;
    x = (float(s >> 8) * (1.f / 8388608.f) - 1.f) * scale;
  }
  return v;
}

class CudaMoeCombineFold : public CudaMoeFusions {
 protected:
  struct Experts {
    std::vector<float> gu_h, dn_h;
    Tensor gu, dn;
  };
  Experts experts(DType t, const ExpertShape& c) {
    Experts e;
    e.gu_h = round_to(fast_values(size_t(c.n_experts * 2 * c.inter * c.hidden), 11u, 0.08f), t);
    e.dn_h = round_to(fast_values(size_t(c.n_experts * c.hidden * c.inter), 12u, 0.08f), t);
    e.gu = upload(e.gu_h, t, {c.n_experts, 2 * c.inter, c.hidden});
    e.dn = upload(e.dn_h, t, {c.n_experts, c.hidden, c.inter});
    return e;
  }
  // As MoeBuffers: act [n k, I]; expert_out with room for the n k float32 outputs; the index.
  MoeScratch scratch(DType t, int64_t n, const ExpertShape& c) {
    return MoeScratch{empty(t, {n * c.k, c.inter}), empty(t, {2 * n * c.k, c.hidden}),
                      empty(DType::i32, {2 * c.n_experts + 2 + n * c.k})};
  }
  // A zeroed ticket array as the backend's.
  cuda::MoeTickets tickets() {
    Tensor t = empty(DType::i32, {8192});
    gpu->fill(t, 0.f);
    return cuda::MoeTickets{static_cast<unsigned*>(t.data), 8192};
  }
  // Distinct random experts a row and weights in (0.05, 1).
  void routing(int64_t n, const ExpertShape& c, std::vector<int32_t>& ids, std::vector<float>& w) {
    ids.assign(size_t(n * c.k), 0);
    w.assign(size_t(n * c.k), 0.f);
    std::uniform_int_distribution<int32_t> pick(0, int32_t(c.n_experts - 1));
    std::uniform_real_distribution<float> weight(0.05f, 1.f);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < c.k; ++j) {
        int32_t e;
        do e = pick(rng);
        while (std::find(ids.begin() + i * c.k, ids.begin() + i * c.k + j, e) != ids.begin() + i * c.k + j);
        ids[size_t(i * c.k + j)] = e;
        w[size_t(i * c.k + j)] = weight(rng);
      }
  }
};

// The gathered_gemv path with tickets (the fold) against the same path without (its three
// kernels): bit for bit at 1, 2 and 4 rows; the backend's moe_experts folds at one row (counted)
// and not at 64; the CPU definition within the rounding of act.
TEST_F(CudaMoeCombineFold, FoldedCombineEqualsTheCombineKernel) {
  for (DType t : {DType::bf16, DType::f16}) {
    for (const ExpertShape& c : kExpertShapes) {
      Experts ex = experts(t, c);
      const cuda::MoeTickets tk = tickets();
      for (int64_t n : kRows) {
        SCOPED_TRACE(std::string(short_name(t)) + " " + c.name + " n " + std::to_string(n));
        const int64_t H = c.hidden, k = c.k;
        std::vector<int32_t> ids_h;
        std::vector<float> w_h;
        routing(n, c, ids_h, w_h);
        auto x_h = round_to(random_normal(size_t(n * H), rng), t);
        auto out_h = round_to(random_normal(size_t(n * H), rng), t);
        Tensor x = upload(x_h, t, {n, H}), ids = upload_index(ids_h, {n, k}), w = upload(w_h, DType::f32, {n, k});
        Tensor folded = upload(out_h, t, {n, H}), want = upload(out_h, t, {n, H}), be_out = upload(out_h, t, {n, H});
        if (n <= 4) {
          const int64_t before = cuda::gemv_experts_combine_launches();
          cuda::launch_moe_experts_path(cuda::MoePath::gathered_gemv, folded, x, ex.gu, ex.dn, ids, w,
                                        scratch(t, n, c), stream(), tk);
          EXPECT_EQ(cuda::gemv_experts_combine_launches() - before, 1);
          cuda::launch_moe_experts_path(cuda::MoePath::gathered_gemv, want, x, ex.gu, ex.dn, ids, w, scratch(t, n, c),
                                        stream());
          EXPECT_EQ(download(folded), download(want)) << "folded vs three kernels";
        }
        // The backend: the rule's path, folded at one row only.
        const int64_t before = cuda::gemv_experts_combine_launches();
        gpu->moe_experts(be_out, x, ex.gu, ex.dn, ids, w, scratch(t, n, c));
        if (!switch_set("SEAM_MOE_GATHER_GEMV") && !switch_set("SEAM_MOE_SKINNY"))
          EXPECT_EQ(cuda::gemv_experts_combine_launches() - before, n == 1 ? 1 : 0);
        if (n == 1) EXPECT_EQ(download(be_out), download(want)) << "backend vs three kernels";
        std::vector<float> ref = out_h, act_ref(size_t(n * k * c.inter));
        cpu.moe_experts(host_view(ref, {n, H}), host_view(x_h, {n, H}),
                        host_view(ex.gu_h, {c.n_experts, 2 * c.inter, H}), host_view(ex.dn_h, {c.n_experts, H, c.inter}),
                        host_index(ids_h, {n, k}), host_view(w_h, {n, k}),
                        MoeScratch{host_view(act_ref, {n * k, c.inter}), Tensor(), Tensor()});
        expect_close(download(be_out), ref, tolerance_for(t, {1e-5, 1e-6}, {1e-2, 1e-2}, {3e-2, 3e-2}), "vs cpu");
      }
    }
  }
}

// The whole fused one-row MoE layer (norm + router + route in one kernel, gate_up, down with the
// combine) captured once and replayed for new residuals, each replay equal to the eager
// decomposition (rms_norm, linear, moe_route, the three expert kernels) bit for bit: the route
// and combine counters are left zero by every replay, and the ids are read anew each time.
TEST_F(CudaMoeCombineFold, CapturedFusedLayerReplaysForNewInputs) {
  const DType t = DType::bf16;
  for (const ExpertShape& c : {kExpertShapes[0], kExpertShapes[1]}) {
    SCOPED_TRACE(c.name);
    const int64_t E = c.n_experts, H = c.hidden, k = c.k;
    Experts ex = experts(t, c);
    auto wr_h = round_to(random_normal(size_t(E * H), rng, 0.05f), t);
    auto g_h = round_to(random_normal(size_t(H), rng, 1.f), t);
    Tensor wr = upload(wr_h, t, {E, H}), g = upload(g_h, t, {H});
    Tensor residual = empty(t, {1, H}), normed = empty(t, {1, H}), logits = empty(t, {1, E});
    Tensor ids = empty(DType::i32, {1, k}), w = empty(DType::f32, {1, k});
    Tensor want_res = empty(t, {1, H}), want_normed = empty(t, {1, H}), want_logits = empty(t, {1, E});
    Tensor want_ids = empty(DType::i32, {1, k}), want_w = empty(DType::f32, {1, k});
    const MoeScratch s = scratch(t, 1, c), want_s = scratch(t, 1, c);
    const int64_t routes = cuda::gemv_route_launches(), combines = cuda::gemv_experts_combine_launches();
    gpu->begin_capture();
    gpu->moe_norm_router_route(ids, w, logits, normed, residual, g, 1e-6f, wr, true);
    gpu->moe_experts(residual, normed, ex.gu, ex.dn, ids, w, s);
    auto graph = gpu->end_capture();
    // Both fusions captured (each counted once; the replays launch no host-side kernels).
    if (!route_fusion_switched()) EXPECT_EQ(cuda::gemv_route_launches() - routes, 1);
    if (!switch_set("SEAM_MOE_GATHER_GEMV") && !switch_set("SEAM_MOE_SKINNY"))
      EXPECT_EQ(cuda::gemv_experts_combine_launches() - combines, 1);
    for (int step = 0; step < 4; ++step) {
      const auto res_h = round_to(random_normal(size_t(H), rng, 2.f), t);
      write(residual, res_h);
      write(want_res, res_h);
      gpu->replay(*graph);
      gpu->rms_norm(want_normed, want_res, g, 1e-6f);
      gpu->linear(want_logits, want_normed, wr, Tensor());
      gpu->moe_route(want_ids, want_w, want_logits, true);
      cuda::launch_moe_experts_path(cuda::MoePath::gathered_gemv, want_res, want_normed, ex.gu, ex.dn, want_ids, want_w,
                                    want_s, stream());
      const std::string what = "replay " + std::to_string(step);
      EXPECT_EQ(download(normed), download(want_normed)) << what;
      EXPECT_EQ(download(logits), download(want_logits)) << what;
      EXPECT_EQ(download_i32(ids), download_i32(want_ids)) << what;
      EXPECT_EQ(download(w), download(want_w)) << what;
      EXPECT_EQ(download(residual), download(want_res)) << what;
    }
  }
}

}  // namespace
}  // namespace seam::test
