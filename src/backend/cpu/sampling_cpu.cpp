#include "backend/cpu/sampling_cpu.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "backend/sampling_rng.h"

namespace seam {

int32_t sample_row(float* logits, int vocab, float temperature, int top_k, float top_p, float min_p,
                   uint64_t seed, uint32_t step) {
  int best = 0;
  for (int i = 1; i < vocab; ++i)
    if (logits[i] > logits[best]) best = i;
  if (temperature <= 0.f || top_k == 1) return best;

  const float max_logit = logits[best];
  std::vector<float> p(vocab);
  double total = 0;
  for (int i = 0; i < vocab; ++i) {
    p[i] = std::exp((logits[i] - max_logit) / temperature);
    total += p[i];
  }
  for (int i = 0; i < vocab; ++i) p[i] = float(p[i] / total);

  std::vector<int> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  int n_keep = vocab;
  if (top_k > 0 && top_k < vocab) {
    n_keep = top_k;
    std::partial_sort(order.begin(), order.begin() + n_keep, order.end(),
                      [&](int a, int b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
  } else {
    std::sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
  }
  double kept = 0;
  for (int i = 0; i < n_keep; ++i) kept += p[order[i]];
  if (top_p < 1.f) {
    double cum = 0;
    int n = 0;
    while (n < n_keep) {
      cum += p[order[n]] / kept;
      ++n;
      if (cum >= top_p) break;
    }
    n_keep = std::max(n, 1);
  }
  if (min_p > 0.f) {
    const float threshold = min_p * p[order[0]];
    int n = 1;
    while (n < n_keep && p[order[n]] >= threshold) ++n;
    n_keep = n;
  }
  double sum = 0;
  for (int i = 0; i < n_keep; ++i) sum += p[order[i]];
  const double u = sampling_uniform(seed, step) * sum;
  double cum = 0;
  for (int i = 0; i < n_keep; ++i) {
    cum += p[order[i]];
    if (cum > u) return order[i];
  }
  return order[n_keep - 1];
}

void logprobs_row(const float* logits, int vocab, int k, int32_t sampled, float* out_sampled, int32_t* top_ids,
                  float* top_lp) {
  if (k < 0) return;
  float max_logit = logits[0];
  for (int i = 1; i < vocab; ++i) max_logit = std::max(max_logit, logits[i]);
  // The normalizer in double: a float32 running sum over a 128k vocabulary drifts by ~1e-4 in the
  // log (measured against the GPU's tree reduction), too much for a reference.
  double sum = 0.0;
  for (int i = 0; i < vocab; ++i) sum += std::exp(double(logits[i]) - double(max_logit));
  const float log_sum = float(std::log(sum));
  auto logprob = [&](int i) { return (logits[i] - max_logit) - log_sum; };
  if (sampled >= 0 && sampled < vocab) *out_sampled = logprob(sampled);
  const int n_top = std::min(k, vocab);
  if (n_top == 0) return;
  std::vector<int> order(static_cast<size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + n_top, order.end(),
                    [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  for (int j = 0; j < n_top; ++j) {
    top_ids[j] = order[size_t(j)];
    top_lp[j] = logprob(order[size_t(j)]);
  }
}

}  // namespace seam
