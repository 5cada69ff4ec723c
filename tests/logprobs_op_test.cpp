// The logprobs and apply_logit_bias ops of the CPU backend (the float32 reference the
// CUDA kernels are checked against) against a direct log_softmax in double precision.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "api/token_logprob.h"
#include "backend/cpu/cpu_backend.h"

namespace seam {
namespace {

std::vector<double> log_softmax(const std::vector<float>& l) {
  const double m = *std::max_element(l.begin(), l.end());
  double s = 0;
  for (float x : l) s += std::exp(double(x) - m);
  std::vector<double> out;
  for (float x : l) out.push_back(double(x) - m - std::log(s));
  return out;
}

struct Outputs {
  std::vector<float> sampled;
  std::vector<int32_t> top_ids;
  std::vector<float> top;
};

// Runs the op over rows of logits, outputs pre-filled with sentinels (-7 / 7.5f).
Outputs run(const std::vector<std::vector<float>>& rows, const std::vector<int32_t>& k,
            const std::vector<int32_t>& sampled) {
  CpuBackend be;
  const int n = int(rows.size()), vocab = int(rows[0].size()), K = kMaxTopLogprobs;
  std::vector<float> logits;
  for (const auto& r : rows) logits.insert(logits.end(), r.begin(), r.end());
  std::vector<int32_t> ks = k, ids = sampled;
  Outputs o{std::vector<float>(size_t(n), 7.5f), std::vector<int32_t>(size_t(n) * K, -7),
            std::vector<float>(size_t(n) * K, 7.5f)};
  LogprobBatch b;
  b.n = n;
  b.k = Tensor(ks.data(), DType::i32, Device::cpu, {n});
  b.sampled = Tensor(ids.data(), DType::i32, Device::cpu, {n});
  b.out_sampled = Tensor(o.sampled.data(), DType::f32, Device::cpu, {n});
  b.out_top_ids = Tensor(o.top_ids.data(), DType::i32, Device::cpu, {n, K});
  b.out_top = Tensor(o.top.data(), DType::f32, Device::cpu, {n, K});
  be.logprobs(Tensor(logits.data(), DType::f32, Device::cpu, {n, vocab}), b);
  be.synchronize();
  return o;
}

TEST(LogprobsOp, MatchesLogSoftmaxAndOrdersTopK) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.f, 4.f);
  const int vocab = 1000;
  std::vector<std::vector<float>> rows(3, std::vector<float>(vocab));
  for (auto& r : rows)
    for (float& x : r) x = dist(rng);
  const std::vector<int32_t> k = {20, 5, 0}, sampled = {17, 999, 0};
  const Outputs o = run(rows, k, sampled);
  for (int r = 0; r < 3; ++r) {
    const std::vector<double> ref = log_softmax(rows[size_t(r)]);
    EXPECT_NEAR(o.sampled[size_t(r)], ref[size_t(sampled[size_t(r)])], 1e-4) << "row " << r;
    std::vector<int> order(vocab);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return ref[size_t(a)] > ref[size_t(b)]; });
    for (int j = 0; j < kMaxTopLogprobs; ++j) {
      const size_t at = size_t(r) * kMaxTopLogprobs + size_t(j);
      if (j < k[size_t(r)]) {
        EXPECT_EQ(o.top_ids[at], order[size_t(j)]) << "row " << r << " rank " << j;
        EXPECT_NEAR(o.top[at], ref[size_t(order[size_t(j)])], 1e-4);
      } else {  // past k: untouched
        EXPECT_EQ(o.top_ids[at], -7);
        EXPECT_EQ(o.top[at], 7.5f);
      }
    }
  }
  // Probabilities sum to one: the logprobs are normalised.
  const Outputs all = run({std::vector<float>{1.f, 2.f, 3.f}}, {3}, {0});
  double p = 0;
  for (int j = 0; j < 3; ++j) p += std::exp(double(all.top[size_t(j)]));
  EXPECT_NEAR(p, 1.0, 1e-6);
}

// A Llama-3-sized vocabulary: the reference stays within float32 rounding of a double log_softmax
// (a float32 running sum of 128k terms drifted by ~1.6e-4 and disagreed with the GPU's reduction).
TEST(LogprobsOp, StaysExactOverA128kVocabulary) {
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.f, 3.f);
  const int vocab = 128256;
  std::vector<std::vector<float>> rows(1, std::vector<float>(vocab));
  for (float& x : rows[0]) x = dist(rng);
  const Outputs o = run(rows, {20}, {4242});
  const std::vector<double> ref = log_softmax(rows[0]);
  EXPECT_NEAR(o.sampled[0], ref[4242], 5e-6);
  for (int j = 0; j < 20; ++j) EXPECT_NEAR(o.top[size_t(j)], ref[size_t(o.top_ids[size_t(j)])], 5e-6) << "rank " << j;
}

TEST(LogprobsOp, TiesGoToTheLowerId) {
  const Outputs o = run({{1.f, 5.f, 2.f, 5.f, 5.f, -3.f}}, {4}, {3});
  EXPECT_EQ((std::vector<int32_t>(o.top_ids.begin(), o.top_ids.begin() + 4)), (std::vector<int32_t>{1, 3, 4, 2}));
  EXPECT_EQ(o.top[0], o.top[1]);
  EXPECT_EQ(o.top[1], o.top[2]);
  EXPECT_EQ(o.sampled[0], o.top[0]);  // the sampled token (3) ties with the best
}

TEST(LogprobsOp, SkippedRowsAndVocabEdge) {
  // k = -1: the row is left exactly as it was (a row that asks for nothing).
  const Outputs skip = run({{1.f, 2.f}, {3.f, 4.f}}, {-1, 1}, {0, 1});
  EXPECT_EQ(skip.sampled[0], 7.5f);
  EXPECT_EQ(skip.top_ids[0], -7);
  EXPECT_NEAR(skip.sampled[1], -std::log1p(std::exp(-1.0)), 1e-6);
  EXPECT_EQ(skip.top_ids[size_t(kMaxTopLogprobs)], 1);
  // k = 20 over a vocabulary of 3: three entries, the rest untouched; the last id of the
  // vocabulary is reachable; an out-of-range sampled id leaves out_sampled alone.
  const Outputs edge = run({{0.f, -1.f, 9.f}}, {20}, {3});
  EXPECT_EQ(edge.sampled[0], 7.5f);
  EXPECT_EQ((std::vector<int32_t>(edge.top_ids.begin(), edge.top_ids.begin() + 4)),
            (std::vector<int32_t>{2, 0, 1, -7}));
  // k = 0: only the sampled token's logprob.
  const Outputs zero = run({{0.f, 0.f}}, {0}, {1});
  EXPECT_NEAR(zero.sampled[0], -std::log(2.0), 1e-6);
  EXPECT_EQ(zero.top_ids[0], -7);
  // Large logits do not overflow: the max is subtracted first.
  const Outputs big = run({{1000.f, 999.f}}, {2}, {1});
  EXPECT_TRUE(std::isfinite(big.sampled[0]));
  EXPECT_NEAR(big.top[0], -std::log1p(std::exp(-1.0)), 1e-5);
}

TEST(LogitBiasOp, AddsPerRowEntries) {
  CpuBackend be;
  std::vector<float> logits = {0.f, 1.f, 2.f, 3.f, 4.f, 5.f};  // [2, 3]
  std::vector<int32_t> indptr = {0, 2, 3}, tokens = {0, 2, 1};
  std::vector<float> values = {100.f, -1.5f, -100.f};
  LogitBiasBatch b;
  b.n = 2;
  b.nnz = 3;
  b.indptr = Tensor(indptr.data(), DType::i32, Device::cpu, {3});
  b.tokens = Tensor(tokens.data(), DType::i32, Device::cpu, {3});
  b.values = Tensor(values.data(), DType::f32, Device::cpu, {3});
  be.apply_logit_bias(Tensor(logits.data(), DType::f32, Device::cpu, {2, 3}), b);
  be.synchronize();
  EXPECT_EQ(logits, (std::vector<float>{100.f, 1.f, 0.5f, 3.f, -96.f, 5.f}));
}

}  // namespace
}  // namespace seam
