// The cpu backend's mixture-of-experts ops against a naive double-precision loop written
// straight from the definition (backend.h, "mixture of experts"): routing (softmax over all
// experts, top-k with lower ids first on ties, optional renormalisation), the weighted sum of
// the chosen experts' SiLU MLPs accumulated into out, the gated shared expert; padded rows;
// replay of a captured graph with new routing; and the argument checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"

namespace seam {
namespace {

Tensor f32(std::vector<float>& v, std::initializer_list<int64_t> dims) {
  return Tensor(v.data(), DType::f32, Device::cpu, dims);
}
Tensor i32(std::vector<int32_t>& v, std::initializer_list<int64_t> dims) {
  return Tensor(v.data(), DType::i32, Device::cpu, dims);
}

// moe_experts' act scratch for n rows of k experts of width inter (kept alive by the test).
struct ActScratch {
  std::vector<float> v;
  MoeScratch t;
  ActScratch(int rows, int inter) : v(size_t(rows * inter)) {
    t.act = Tensor(v.data(), DType::f32, Device::cpu, {rows, inter});
  }
};

std::vector<float> random_values(size_t n, uint32_t seed, float scale = 1.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// The reference routing of one row, in double.
void naive_route(const float* logits, int n_experts, int k, bool renormalize, std::vector<int>& ids,
                 std::vector<double>& weights) {
  double mx = -INFINITY, sum = 0;
  for (int e = 0; e < n_experts; ++e) mx = std::max(mx, double(logits[e]));
  std::vector<double> p(static_cast<size_t>(n_experts));
  for (int e = 0; e < n_experts; ++e) sum += p[size_t(e)] = std::exp(double(logits[e]) - mx);
  for (double& x : p) x /= sum;
  std::vector<int> order(static_cast<size_t>(n_experts));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[size_t(a)] > p[size_t(b)]; });
  ids.assign(order.begin(), order.begin() + k);
  weights.clear();
  double chosen = 0;
  for (int e : ids) chosen += p[size_t(e)];
  for (int e : ids) weights.push_back(renormalize ? p[size_t(e)] / chosen : p[size_t(e)]);
}

class MoeRoute : public ::testing::TestWithParam<std::tuple<int, int, bool>> {};

TEST_P(MoeRoute, MatchesNaiveSoftmaxTopK) {
  const auto [n_experts, k, renormalize] = GetParam();
  const int n = 9;
  CpuBackend be;
  std::vector<float> logits = random_values(size_t(n * n_experts), 7u + uint32_t(n_experts), 2.f);
  std::vector<int32_t> ids(size_t(n * k), -1);
  std::vector<float> weights(size_t(n * k), -1.f);
  be.moe_route(i32(ids, {n, k}), f32(weights, {n, k}), f32(logits, {n, n_experts}), renormalize);
  for (int i = 0; i < n; ++i) {
    std::vector<int> want_ids;
    std::vector<double> want_w;
    naive_route(logits.data() + i * n_experts, n_experts, k, renormalize, want_ids, want_w);
    double sum = 0;
    for (int j = 0; j < k; ++j) {
      EXPECT_EQ(ids[size_t(i * k + j)], want_ids[size_t(j)]) << "row " << i << " rank " << j;
      EXPECT_NEAR(weights[size_t(i * k + j)], want_w[size_t(j)], 1e-6) << "row " << i << " rank " << j;
      sum += weights[size_t(i * k + j)];
    }
    if (renormalize) EXPECT_NEAR(sum, 1.0, 1e-6);
    else EXPECT_LT(sum, 1.0 - 1e-3) << "the chosen probabilities alone (k < n_experts)";
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, MoeRoute,
                         ::testing::Values(std::make_tuple(8, 2, true), std::make_tuple(8, 2, false),
                                           std::make_tuple(60, 4, false), std::make_tuple(128, 8, true)));

TEST(MoeRouteTies, LowerIdFirst) {
  CpuBackend be;
  std::vector<float> logits = {1.f, 3.f, 0.5f, 3.f, 3.f, -1.f};
  std::vector<int32_t> ids(3);
  std::vector<float> w(3);
  be.moe_route(i32(ids, {1, 3}), f32(w, {1, 3}), f32(logits, {1, 6}), true);
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 3, 4}));
  for (float x : w) EXPECT_NEAR(x, 1.f / 3.f, 1e-7);
}

TEST(MoeRoutePadding, NonFiniteLogitsStillGiveDistinctIdsInRange) {
  CpuBackend be;
  const int E = 6, k = 3;
  std::vector<float> logits = {NAN, NAN, NAN, NAN, NAN, NAN,                  // a poisoned padded row
                               INFINITY, 0.f, INFINITY, 1.f, -INFINITY, 2.f,  // overflowed logits
                               0.f, NAN, 5.f, 1.f, NAN, 4.f};
  std::vector<int32_t> ids(size_t(3 * k));
  std::vector<float> w(size_t(3 * k));
  be.moe_route(i32(ids, {3, k}), f32(w, {3, k}), f32(logits, {3, E}), true);
  for (int i = 0; i < 3; ++i) {
    std::vector<int32_t> row(ids.begin() + i * k, ids.begin() + (i + 1) * k);
    for (int32_t e : row) EXPECT_TRUE(e >= 0 && e < E) << "row " << i << " id " << e;
    std::sort(row.begin(), row.end());
    EXPECT_EQ(std::unique(row.begin(), row.end()), row.end()) << "row " << i << " repeats an expert";
  }
}

struct ExpertWeights {
  int n_experts, inter, hidden;
  std::vector<float> gate_up, down;  // [E, 2I, H], [E, H, I]
};

ExpertWeights random_experts(int n_experts, int inter, int hidden) {
  return {n_experts, inter, hidden, random_values(size_t(n_experts * 2 * inter * hidden), 11u, 0.3f),
          random_values(size_t(n_experts * hidden * inter), 13u, 0.3f)};
}

// out[i] + sum_j w_ij * down_e(silu(gate_e x_i) * up_e x_i), in double.
std::vector<double> naive_experts(const ExpertWeights& ew, const std::vector<float>& out, const std::vector<float>& x,
                                  const std::vector<int32_t>& ids, const std::vector<float>& w, int n, int k) {
  const int I = ew.inter, H = ew.hidden;
  std::vector<double> res(out.begin(), out.end());
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < k; ++j) {
      int e = ids[size_t(i * k + j)];
      if (e < 0 || e >= ew.n_experts) e = 0;
      std::vector<double> act(static_cast<size_t>(I));
      for (int r = 0; r < I; ++r) {
        double g = 0, u = 0;
        for (int c = 0; c < H; ++c) {
          g += double(x[size_t(i * H + c)]) * ew.gate_up[size_t((e * 2 * I + r) * H + c)];
          u += double(x[size_t(i * H + c)]) * ew.gate_up[size_t((e * 2 * I + I + r) * H + c)];
        }
        act[size_t(r)] = g / (1 + std::exp(-g)) * u;
      }
      for (int h = 0; h < H; ++h) {
        double y = 0;
        for (int r = 0; r < I; ++r) y += act[size_t(r)] * ew.down[size_t((e * H + h) * I + r)];
        res[size_t(i * H + h)] += double(w[size_t(i * k + j)]) * y;
      }
    }
  return res;
}

TEST(MoeExperts, AccumulatesTheWeightedChosenExpertsAsTheNaiveLoop) {
  const int n = 6, E = 5, I = 7, H = 12, k = 2;
  ExpertWeights ew = random_experts(E, I, H);
  std::vector<float> x = random_values(size_t(n * H), 17u);
  std::vector<float> out = random_values(size_t(n * H), 19u);  // the residual the experts add to
  // Every expert used by some row; the last row (padding) carries ids out of range.
  std::vector<int32_t> ids = {0, 3, 4, 1, 2, 0, 3, 1, 4, 0, -7, 99};
  std::vector<float> w = {0.7f, 0.3f, 0.55f, 0.45f, 0.9f, 0.1f, 0.6f, 0.4f, 0.5f, 0.5f, 0.25f, 0.75f};
  const std::vector<double> want = naive_experts(ew, out, x, ids, w, n, k);
  CpuBackend be;
  ActScratch act(n * k, I);
  be.moe_experts(f32(out, {n, H}), f32(x, {n, H}), f32(ew.gate_up, {E, 2 * I, H}), f32(ew.down, {E, H, I}),
                 i32(ids, {n, k}), f32(w, {n, k}), act.t);
  double max_err = 0, max_ref = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    max_err = std::max(max_err, std::fabs(out[i] - want[i]));
    max_ref = std::max(max_ref, std::fabs(want[i]));
  }
  EXPECT_LT(max_err, 1e-5 * max_ref) << "max |err| " << max_err;
}

TEST(MoeExperts, StridedRowsReadAndWriteOnlyTheirColumns) {
  const int n = 3, E = 3, I = 4, H = 8, k = 2, pitch = 11;
  ExpertWeights ew = random_experts(E, I, H);
  std::vector<float> x_wide = random_values(size_t(n * pitch), 23u), out_wide(size_t(n * pitch), 0.25f);
  std::vector<int32_t> ids = {2, 0, 1, 2, 0, 1};
  std::vector<float> w = {0.6f, 0.4f, 0.5f, 0.5f, 0.8f, 0.2f};
  std::vector<float> x(size_t(n * H)), out(size_t(n * H), 0.25f);
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < H; ++c) x[size_t(i * H + c)] = x_wide[size_t(i * pitch + c)];
  const std::vector<double> want = naive_experts(ew, out, x, ids, w, n, k);
  CpuBackend be;
  Tensor xt = f32(x_wide, {n, pitch}).slice_cols(0, H), ot = f32(out_wide, {n, pitch}).slice_cols(0, H);
  ActScratch act(n * k, I);
  be.moe_experts(ot, xt, f32(ew.gate_up, {E, 2 * I, H}), f32(ew.down, {E, H, I}), i32(ids, {n, k}), f32(w, {n, k}),
                 act.t);
  for (int i = 0; i < n; ++i) {
    for (int c = 0; c < H; ++c) EXPECT_NEAR(out_wide[size_t(i * pitch + c)], want[size_t(i * H + c)], 1e-5);
    for (int c = H; c < pitch; ++c) EXPECT_EQ(out_wide[size_t(i * pitch + c)], 0.25f) << "column past the view";
  }
}

TEST(MoeSharedExpertAdd, AddsTheSigmoidGatedOutput) {
  const int n = 3, H = 5;
  std::vector<float> out = random_values(size_t(n * H), 29u), y = random_values(size_t(n * H), 31u);
  std::vector<float> gate = {-2.f, 0.f, 3.5f};
  std::vector<float> before = out;
  CpuBackend be;
  be.moe_shared_expert_add(f32(out, {n, H}), f32(y, {n, H}), f32(gate, {n, 1}));
  for (int i = 0; i < n; ++i)
    for (int h = 0; h < H; ++h)
      EXPECT_NEAR(out[size_t(i * H + h)],
                  before[size_t(i * H + h)] + y[size_t(i * H + h)] / (1 + std::exp(-double(gate[size_t(i)]))), 1e-6);
}

// A captured graph bakes the buffers, not the routing: replayed with new router logits it
// routes them anew, as each step of a decode graph must.
TEST(MoeGraph, ReplayRoutesTheLogitsOfTheStep) {
  const int n = 4, E = 6, I = 3, H = 8, k = 2;
  ExpertWeights ew = random_experts(E, I, H);
  std::vector<float> x = random_values(size_t(n * H), 37u);
  std::vector<float> logits = random_values(size_t(n * E), 41u, 2.f);
  std::vector<int32_t> ids(size_t(n * k));
  std::vector<float> w(size_t(n * k)), out(size_t(n * H), 0.f);
  CpuBackend be;
  ActScratch act(n * k, I);
  auto run = [&] {
    be.moe_route(i32(ids, {n, k}), f32(w, {n, k}), f32(logits, {n, E}), true);
    be.moe_experts(f32(out, {n, H}), f32(x, {n, H}), f32(ew.gate_up, {E, 2 * I, H}), f32(ew.down, {E, H, I}),
                   i32(ids, {n, k}), f32(w, {n, k}), act.t);
  };
  be.begin_capture();
  run();
  auto graph = be.end_capture();
  EXPECT_EQ(be.n_recorded(), 0u);
  for (uint32_t step = 0; step < 3; ++step) {
    const std::vector<float> fresh = random_values(size_t(n * E), 100u + step, 2.f);
    std::copy(fresh.begin(), fresh.end(), logits.begin());  // in place: the graph baked the address
    std::fill(out.begin(), out.end(), 0.f);
    be.replay(*graph);
    const std::vector<float> replayed = out;
    const std::vector<int32_t> replayed_ids = ids;
    std::fill(out.begin(), out.end(), 0.f);
    run();  // eager on the same logits
    EXPECT_EQ(replayed_ids, ids) << "step " << step;
    EXPECT_EQ(replayed, out) << "step " << step;
    std::vector<int> want;
    std::vector<double> want_w;
    naive_route(logits.data(), E, k, true, want, want_w);
    EXPECT_EQ(replayed_ids[0], want[0]);
    EXPECT_EQ(replayed_ids[1], want[1]);
  }
}

// moe_router_route is its definition: linear (no bias), then moe_route, to the bit; the logits
// are written too.
TEST(MoeRouterRoute, EqualsLinearThenRoute) {
  const int n = 3, E = 12, H = 16, k = 3;
  std::vector<float> x = random_values(size_t(n * H), 51u), wr = random_values(size_t(E * H), 52u, 0.5f);
  for (bool renorm : {true, false}) {
    std::vector<float> logits(size_t(n * E)), w(size_t(n * k)), want_logits(size_t(n * E)), want_w(size_t(n * k));
    std::vector<int32_t> ids(size_t(n * k)), want_ids(size_t(n * k));
    CpuBackend be;
    be.moe_router_route(i32(ids, {n, k}), f32(w, {n, k}), f32(logits, {n, E}), f32(x, {n, H}), f32(wr, {E, H}), renorm);
    be.linear(f32(want_logits, {n, E}), f32(x, {n, H}), f32(wr, {E, H}), Tensor());
    be.moe_route(i32(want_ids, {n, k}), f32(want_w, {n, k}), f32(want_logits, {n, E}), renorm);
    EXPECT_EQ(logits, want_logits);
    EXPECT_EQ(ids, want_ids);
    EXPECT_EQ(w, want_w);
  }
}

// moe_norm_router_route is its definition: rms_norm (normed written), then moe_router_route.
TEST(MoeRouterRoute, NormFusedEqualsNormThenRouterRoute) {
  const int n = 2, E = 10, H = 24, k = 4;
  std::vector<float> x = random_values(size_t(n * H), 61u, 3.f), wr = random_values(size_t(E * H), 62u, 0.5f);
  std::vector<float> g = random_values(size_t(H), 63u);
  std::vector<float> normed(size_t(n * H)), logits(size_t(n * E)), w(size_t(n * k));
  std::vector<float> want_normed(size_t(n * H)), want_logits(size_t(n * E)), want_w(size_t(n * k));
  std::vector<int32_t> ids(size_t(n * k)), want_ids(size_t(n * k));
  CpuBackend be;
  be.moe_norm_router_route(i32(ids, {n, k}), f32(w, {n, k}), f32(logits, {n, E}), f32(normed, {n, H}), f32(x, {n, H}),
                           f32(g, {H}), 1e-6f, f32(wr, {E, H}), true);
  be.rms_norm(f32(want_normed, {n, H}), f32(x, {n, H}), f32(g, {H}), 1e-6f);
  be.moe_router_route(i32(want_ids, {n, k}), f32(want_w, {n, k}), f32(want_logits, {n, E}), f32(want_normed, {n, H}),
                      f32(wr, {E, H}), true);
  EXPECT_EQ(normed, want_normed);
  EXPECT_EQ(logits, want_logits);
  EXPECT_EQ(ids, want_ids);
  EXPECT_EQ(w, want_w);
}

void expect_error(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "expected an error containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(MoeOpChecks, BadArgumentsAreErrorsNamingTheOpAndArgument) {
  CpuBackend be;
  const int n = 2, E = 4, I = 3, H = 5, k = 2;
  ExpertWeights ew = random_experts(E, I, H);
  std::vector<float> x(size_t(n * H)), out(size_t(n * H)), logits(size_t(n * E)), w(size_t(n * k));
  std::vector<int32_t> ids(size_t(n * k));
  std::vector<float> wide_w(size_t(n * 5));
  ActScratch act(n * k, I), small_act(n * k - 1, I);
  std::vector<int32_t> wide_ids(size_t(n * 5));
  expect_error([&] { be.moe_route(i32(wide_ids, {n, 5}), f32(wide_w, {n, 5}), f32(logits, {n, E}), true); },
               "moe_route: k = 5 is more than the 4 experts");
  expect_error([&] { be.moe_route(Tensor(w.data(), DType::f32, Device::cpu, {n, k}), f32(w, {n, k}),
                                  f32(logits, {n, E}), true); },
               "moe_route topk_ids: dtype");
  expect_error([&] { be.moe_route(i32(ids, {n, k}), f32(w, {n, k}), f32(logits, {n - 1, E}), true); },
               "moe_route: topk_ids has 2 rows");
  expect_error([&] { be.moe_experts(f32(out, {n, H}), f32(x, {n, H}), f32(ew.gate_up, {E, 2 * I, H}),
                                    f32(ew.down, {E, I, H}), i32(ids, {n, k}), f32(w, {n, k}), act.t); },
               "moe_experts w_down: shape [4, 3, 5], expected [4, 5, 3]");
  expect_error([&] { be.moe_experts(f32(x, {n, H}), f32(x, {n, H}), f32(ew.gate_up, {E, 2 * I, H}),
                                    f32(ew.down, {E, H, I}), i32(ids, {n, k}), f32(w, {n, k}), act.t); },
               "moe_experts: out overlaps x");
  expect_error([&] { be.moe_experts(f32(out, {n, H}), f32(x, {n, H}), f32(ew.gate_up, {E * 2 * I, H}),
                                    f32(ew.down, {E, H, I}), i32(ids, {n, k}), f32(w, {n, k}), act.t); },
               "moe_experts w_gate_up: expected [n_experts, 2 * inter, hidden]");
  expect_error([&] { be.moe_experts(f32(out, {n, H}), f32(x, {n, H}), f32(ew.gate_up, {E, 2 * I, H}),
                                    f32(ew.down, {E, H, I}), i32(ids, {n, k}), f32(w, {n, k}), small_act.t); },
               "moe_experts act: expected [>= 4, 3], got [3, 3]");
  expect_error([&] { be.moe_shared_expert_add(f32(out, {n, H}), f32(x, {n, H}), f32(w, {n, k})); },
               "moe_shared_expert_add gate: shape [2, 2], expected [2, 1]");
}

}  // namespace
}  // namespace seam
