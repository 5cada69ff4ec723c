// The CUDA sampler against the CPU rule (sampling_cpu.h): greedy exactly; seeded draws
// equal for the same (seed, step) in all but rare rows (the two sides compute p with
// different exp implementations and sum it differently, so a draw landing within ~1e-7
// of a cumulative boundary may flip); independence of batch composition, exactly; and
// kept-set / frequency checks that do not depend on the CPU at all.
#include <algorithm>
#include <map>
#include <numeric>

#include "backend/cpu/sampling_cpu.h"
#include "cuda_test_util.h"

namespace seam::test {
namespace {

struct RowParams {
  float temperature = 1.f;
  int32_t top_k = 0;
  float top_p = 1.f;
  float min_p = 0.f;
  int64_t seed = 0;
  int32_t step = 0;
};

class CudaSampling : public CudaTest {
 protected:
  // Samples `rows` (each [vocab] logits) with `params` on the GPU, one batch.
  std::vector<int32_t> gpu_sample(const std::vector<std::vector<float>>& rows, const std::vector<RowParams>& params) {
    const int64_t n = int64_t(rows.size()), vocab = int64_t(rows[0].size());
    std::vector<float> flat;
    for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
    std::vector<float> temp, top_p, min_p;
    std::vector<int32_t> top_k, step;
    std::vector<int64_t> seed;
    for (const auto& p : params) {
      temp.push_back(p.temperature);
      top_k.push_back(p.top_k);
      top_p.push_back(p.top_p);
      min_p.push_back(p.min_p);
      seed.push_back(p.seed);
      step.push_back(p.step);
    }
    Tensor logits = upload(flat, DType::f32, {n, vocab});
    SamplingBatch s;
    s.n = int(n);
    s.temperature = upload(temp, DType::f32, {n});
    s.top_k = upload_index(top_k, {n});
    s.top_p = upload(top_p, DType::f32, {n});
    s.min_p = upload(min_p, DType::f32, {n});
    s.seed = upload_index(seed, {n});
    s.step = upload_index(step, {n});
    Tensor out = empty(DType::i32, {n});
    gpu->sample(out, logits, s);
    return download_i32(out);
  }
  static int32_t cpu_sample(std::vector<float> logits, const RowParams& p) {
    return sample_row(logits.data(), int(logits.size()), p.temperature, p.top_k, p.top_p, p.min_p,
                      uint64_t(p.seed), uint32_t(p.step));
  }
  // LLM-like logits: a few strong candidates over a broad tail.
  std::vector<float> llm_logits(int vocab) {
    auto l = random_normal(size_t(vocab), rng, 2.f);
    std::uniform_int_distribution<int> pick(0, vocab - 1);
    for (int i = 0; i < 8; ++i) l[size_t(pick(rng))] += 8.f + float(i);
    return l;
  }
  std::vector<RowParams> mixed_params(int n, int salt) {
    const float temps[] = {0.6f, 1.f, 1.4f};
    const int32_t ks[] = {0, 50, 1000, 0};
    const float ps[] = {1.f, 0.9f, 0.5f, 0.99f, 1.f};
    const float mps[] = {0.f, 0.f, 0.05f};
    std::vector<RowParams> out;
    for (int i = 0; i < n; ++i) {
      RowParams p;
      p.temperature = temps[i % 3];
      p.top_k = ks[i % 4];
      p.top_p = ps[i % 5];
      p.min_p = mps[i % 3];
      p.seed = int64_t(0x9e3779b97f4a7c15ull * uint64_t(i + 1 + salt));
      p.step = i * 7 + salt;
      out.push_back(p);
    }
    return out;
  }
};

TEST_F(CudaSampling, GreedyEqualsCpuExactlyWithTies) {
  for (int vocab : {17, 1000, 152064}) {
    std::vector<std::vector<float>> rows;
    std::vector<RowParams> params;
    for (int r = 0; r < 12; ++r) {
      auto l = random_normal(size_t(vocab), rng, 3.f);
      if (r % 3 == 0) {  // ties at the max: the lowest id wins
        const float mx = *std::max_element(l.begin(), l.end()) + 1.f;
        l[size_t(vocab - 1)] = mx;
        l[size_t(vocab / 2)] = mx;
        l[size_t(vocab / 3)] = mx;
      }
      rows.push_back(l);
      RowParams p;
      p.temperature = r % 2 ? 0.f : 0.8f;
      p.top_k = r % 2 ? 0 : 1;  // temperature 0, or top_k 1: both greedy
      params.push_back(p);
    }
    const auto got = gpu_sample(rows, params);
    for (size_t r = 0; r < rows.size(); ++r) EXPECT_EQ(got[r], cpu_sample(rows[r], params[r])) << "row " << r;
  }
}

TEST_F(CudaSampling, SeededDrawsAgreeWithCpu) {
  for (int vocab : {1000, 128256}) {
    const int n = vocab > 100000 ? 96 : 256;
    std::vector<std::vector<float>> rows;
    for (int r = 0; r < n; ++r) rows.push_back(llm_logits(vocab));
    const auto params = mixed_params(n, vocab);
    const auto got = gpu_sample(rows, params);
    int agree = 0;
    for (int r = 0; r < n; ++r) agree += got[size_t(r)] == cpu_sample(rows[size_t(r)], params[size_t(r)]);
    // A flip needs the draw within ~1e-7 (relative) of a boundary: expected << 1 row here.
    // Allow 2% so a rare legitimate flip does not fail the suite; a wrong rule fails far more.
    EXPECT_GE(agree, n * 98 / 100) << "vocab " << vocab << ": " << agree << " of " << n << " agree";
  }
}

TEST_F(CudaSampling, DrawsDependOnlyOnRowSeedAndStep) {
  const int vocab = 32000, n = 24;
  std::vector<std::vector<float>> rows;
  for (int r = 0; r < n; ++r) rows.push_back(llm_logits(vocab));
  const auto params = mixed_params(n, 3);
  const auto first = gpu_sample(rows, params);
  EXPECT_EQ(gpu_sample(rows, params), first);  // deterministic
  // The same rows in another order, each alone, and mixed with other rows: same ids.
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<std::vector<float>> rows2;
  std::vector<RowParams> params2;
  for (int i : order) {
    rows2.push_back(llm_logits(vocab));  // a stranger row before each
    params2.push_back(mixed_params(1, 99 + i)[0]);
    rows2.push_back(rows[size_t(i)]);
    params2.push_back(params[size_t(i)]);
  }
  const auto second = gpu_sample(rows2, params2);
  for (int j = 0; j < n; ++j) EXPECT_EQ(second[size_t(2 * j + 1)], first[size_t(order[size_t(j)])]) << j;
  for (int r : {0, 5, 17}) EXPECT_EQ(gpu_sample({rows[size_t(r)]}, {params[size_t(r)]})[0], first[size_t(r)]);
}

// Frequencies over many steps follow the filtered distribution (no CPU involved).
TEST_F(CudaSampling, FrequenciesFollowTheKeptDistribution) {
  // p over 8 tokens, with ties; ordered by p then id: 1, 2, 3, 4, 5, 0, 6, 7.
  const std::vector<float> p = {0.05f, 0.3f, 0.2f, 0.2f, 0.1f, 0.1f, 0.04f, 0.01f};
  std::vector<float> logits(p.size());
  for (size_t i = 0; i < p.size(); ++i) logits[i] = std::log(p[i]);
  const int n = 4000;
  std::vector<std::vector<float>> rows(n, logits);
  std::vector<RowParams> params(n);
  for (int i = 0; i < n; ++i) {
    params[size_t(i)].top_k = 4;  // keeps 1, 2, 3, then of the tie 4/5 the lower id, 4
    params[size_t(i)].seed = 42;
    params[size_t(i)].step = i;
  }
  const auto got = gpu_sample(rows, params);
  std::map<int32_t, int> count;
  for (int32_t id : got) ++count[id];
  const std::map<int32_t, double> want = {{1, 0.375}, {2, 0.25}, {3, 0.25}, {4, 0.125}};
  for (const auto& [id, c] : count) EXPECT_TRUE(want.count(id)) << "token " << id << " is outside the top-k set";
  for (const auto& [id, q] : want) {
    const double sd = std::sqrt(q * (1 - q) / n);
    EXPECT_NEAR(double(count[id]) / n, q, 5 * sd) << "token " << id;
  }
  // top_p 0.55: cumulative 0.3, 0.5, 0.7 -> keeps {1, 2, 3}.
  for (auto& pr : params) {
    pr.top_k = 0;
    pr.top_p = 0.55f;
  }
  for (int32_t id : gpu_sample(rows, params)) EXPECT_TRUE(id == 1 || id == 2 || id == 3) << id;
  // min_p 0.5: keeps p >= 0.15 -> {1, 2, 3}.
  for (auto& pr : params) {
    pr.top_p = 1.f;
    pr.min_p = 0.5f;
  }
  for (int32_t id : gpu_sample(rows, params)) EXPECT_TRUE(id == 1 || id == 2 || id == 3) << id;
}

}  // namespace
}  // namespace seam::test
