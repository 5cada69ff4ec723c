// Draft proposal and acceptance without a model: NGRAM prompt lookup, the greedy prefix
// rule, and the sampling rule's output distribution on a small vocabulary (chi-square
// against the target distribution, with a wrong rule shown to fail the same bound).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <map>
#include <vector>

#include "backend/cpu/sampling_cpu.h"
#include "backend/sampling_rng.h"
#include "engine/draft_acceptance.h"
#include "engine/ngram_proposer.h"

namespace seam {
namespace {

TEST(NgramProposer, LongestRecentMatchProposesWhatFollowed) {
  NgramProposer ngram(1, 3);
  std::vector<int32_t> out;
  // "5 6 7 8 9 ... 5 6 7": the 3-token suffix matched at the start; 8 9 1 followed.
  ngram.propose_for({5, 6, 7, 8, 9, 1, 2, 5, 6, 7}, 3, out);
  EXPECT_EQ(out, (std::vector<int32_t>{8, 9, 1}));
  // Capped by max_drafts, and by the sequence's end.
  ngram.propose_for({5, 6, 7, 8, 9, 1, 2, 5, 6, 7}, 1, out);
  EXPECT_EQ(out, (std::vector<int32_t>{8}));
  ngram.propose_for({4, 3, 4}, 5, out);
  EXPECT_EQ(out, (std::vector<int32_t>{3, 4}));
  // The most recent occurrence wins among equal windows: "2 x" then "2 y", suffix "2".
  ngram.propose_for({2, 10, 2, 11, 2}, 1, out);
  EXPECT_EQ(out, (std::vector<int32_t>{11}));
  // A longer window beats a more recent shorter one: suffix "1 2" occurs once, followed by 3.
  ngram.propose_for({1, 2, 3, 9, 2, 4, 1, 2}, 1, out);
  EXPECT_EQ(out, (std::vector<int32_t>{3}));
  // No match: nothing.
  ngram.propose_for({1, 2, 3, 4}, 4, out);
  EXPECT_TRUE(out.empty());
  ngram.propose_for({7}, 4, out);
  EXPECT_TRUE(out.empty());
}

TEST(NgramProposer, MinWindowBoundsTheMatch) {
  NgramProposer ngram(2, 4);
  std::vector<int32_t> out;
  ngram.propose_for({3, 9, 5, 3}, 2, out);  // only "3" repeats: below the min window
  EXPECT_TRUE(out.empty());
  ngram.propose_for({3, 9, 5, 3, 9}, 2, out);  // "3 9" repeats
  EXPECT_EQ(out, (std::vector<int32_t>{5, 3}));
}

TEST(DraftAcceptance, GreedyLongestEqualPrefix) {
  const std::vector<int32_t> drafts = {4, 5, 6, 7};
  EXPECT_EQ(count_accepted(drafts.data(), 4, std::vector<int32_t>{4, 5, 6, 7, 9}.data()), 4);
  EXPECT_EQ(count_accepted(drafts.data(), 4, std::vector<int32_t>{4, 5, 0, 7, 9}.data()), 2);
  EXPECT_EQ(count_accepted(drafts.data(), 4, std::vector<int32_t>{1, 5, 6, 7, 9}.data()), 0);
  EXPECT_EQ(count_accepted(drafts.data(), 0, std::vector<int32_t>{4}.data()), 0);
}

constexpr int V = 5;
using Dist = std::array<float, V>;

// Pearson's chi-square of counts against expected probabilities (cells with p = 0 must be
// empty: a count there is an infinite statistic).
double chi_square(const std::vector<double>& counts, const std::vector<double>& p, double n) {
  double x2 = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0) {
      if (counts[i] > 0) return INFINITY;
      continue;
    }
    const double e = n * p[i];
    x2 += (counts[i] - e) * (counts[i] - e) / e;
  }
  return x2;
}
// Bound: the 0.999 quantile of chi-square with 24 degrees of freedom is 51.2 (a 25-cell
// joint table); 4 degrees of freedom: 18.5.
constexpr double kChi2_24 = 51.2, kChi2_4 = 18.5;

std::vector<float> logits_of(const Dist& p) {
  std::vector<float> l(V);
  for (int t = 0; t < V; ++t) l[size_t(t)] = p[size_t(t)] > 0 ? std::log(p[size_t(t)]) : -1e30f;
  return l;
}
int32_t draw(const Dist& p, uint64_t seed, uint32_t step) {
  std::vector<float> l = logits_of(p);
  return sample_row(l.data(), V, 1.f, -1, 1.f, 0.f, seed, step);
}

// A two-token target: p1 for the first token, p2[a] for the second after a.
const Dist p1 = {0.1f, 0.4f, 0.2f, 0.25f, 0.05f};
Dist p2(int32_t a) {
  Dist d{};
  for (int t = 0; t < V; ++t) d[size_t(t)] = float(1 + ((t + 2 * a) % V));
  float s = 0;
  for (float x : d) s += x;
  for (float& x : d) x /= s;
  return d;
}

// One request of two tokens under NGRAM-style speculation with one fixed draft x: the
// verify row samples y0 ~ p1 (step 0) and, after the draft, y1 ~ p2(x) (step 1); the engine
// keeps y1 only if y0 == x, else the next step samples p2(y0) at step 1. `always_accept`
// is a wrong rule (keeps the draft as if the target agreed) used to show the test's power.
std::pair<int32_t, int32_t> speculative_pair(int32_t x, uint64_t seed, bool always_accept) {
  const std::array<int32_t, 2> target = {draw(p1, seed, 0), draw(p2(x), seed, 1)};
  const int a = always_accept ? 1 : count_accepted(&x, 1, target.data());
  if (a == 1) return {always_accept ? x : target[0], target[1]};
  return {target[0], draw(p2(target[0]), seed, 1)};
}

TEST(DraftAcceptance, SamplingKeepsTheTargetDistribution) {
  const int n = 40000;
  for (int32_t x : {1, 4}) {  // a likely draft and an unlikely one
    std::vector<double> joint(V * V, 0), wrong(V * V, 0), expected(V * V, 0);
    for (int a = 0; a < V; ++a)
      for (int b = 0; b < V; ++b) expected[size_t(a * V + b)] = double(p1[size_t(a)]) * p2(a)[size_t(b)];
    int n_accepted = 0;
    for (int i = 0; i < n; ++i) {
      const uint64_t seed = splitmix64(uint64_t(i) * 7919 + uint64_t(x));
      auto [a, b] = speculative_pair(x, seed, false);
      joint[size_t(a * V + b)]++;
      n_accepted += a == x;
      auto [wa, wb] = speculative_pair(x, seed, true);
      wrong[size_t(wa * V + wb)]++;
    }
    EXPECT_LT(chi_square(joint, expected, n), kChi2_24) << "draft " << x;
    EXPECT_GT(chi_square(wrong, expected, n), kChi2_24) << "draft " << x;  // the bound has power
    // The draft is accepted as often as the target picks it: p1(x).
    EXPECT_NEAR(double(n_accepted) / n, p1[size_t(x)], 0.01) << "draft " << x;
  }
}

TEST(DraftAcceptance, GeneralRejectionRuleKeepsTheTargetDistribution) {
  // The rule a draft model needs: x ~ q, accept with min(1, p/q), else the residual.
  const Dist p = {0.1f, 0.4f, 0.2f, 0.25f, 0.05f};
  const Dist q_model = {0.3f, 0.1f, 0.3f, 0.1f, 0.2f};
  const Dist q_one_hot = {0.f, 0.f, 1.f, 0.f, 0.f};
  const int n = 40000;
  std::vector<double> expected(p.begin(), p.end());
  for (const Dist& q : {q_model, q_one_hot}) {
    std::vector<double> counts(V, 0), ignore_rule(V, 0);
    for (int i = 0; i < n; ++i) {
      const uint64_t seed = splitmix64(uint64_t(i) + 17);
      const int32_t x = draw(q, seed, 0);
      const RejectionStep s =
          rejection_step(p.data(), q.data(), V, x, sampling_uniform(seed, 1), sampling_uniform(seed, 2));
      counts[size_t(s.token)]++;
      ignore_rule[size_t(x)]++;  // keeping the draft always: q, not p
      if (s.accepted) EXPECT_EQ(s.token, x);
    }
    EXPECT_LT(chi_square(counts, expected, n), kChi2_4);
    EXPECT_GT(chi_square(ignore_rule, expected, n), kChi2_4);
  }
}

}  // namespace
}  // namespace seam
