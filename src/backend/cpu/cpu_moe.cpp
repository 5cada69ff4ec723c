// The cpu backend's mixture-of-experts ops: the float32 reference of backend.h's
// "mixture of experts" section, written as plainly as the math (transformers'
// Qwen2Moe/Qwen3Moe/Mixtral sparse blocks), one token at a time.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/moe_op_checks.h"

namespace seam {

namespace {

void f32_only(const Tensor& t, const char* what) {
  SEAM_CHECK(t.dtype == DType::f32, what, ": the cpu backend computes in float32 only, got ", dtype_name(t.dtype));
}

inline float* row_ptr(const Tensor& t, int64_t r) { return t.ptr<float>() + r * t.stride[0]; }

// One row's routing: softmax over all experts (as torch.softmax in float32: max subtracted,
// float sums), then the k largest by repeated selection, a strictly larger p replacing the
// candidate, so equal p keep the lower id (torch.topk's order on ties is not specified;
// this is seam's rule). A NaN p ranks as -inf, so the first unchosen id stands in for it.
void route_row(const float* logits, int64_t n_experts, int k, bool renormalize, int32_t* ids, float* weights,
               std::vector<float>& p, std::vector<char>& taken) {
  float mx = -INFINITY;
  for (int64_t e = 0; e < n_experts; ++e) mx = std::max(mx, logits[e]);
  float sum = 0.f;
  for (int64_t e = 0; e < n_experts; ++e) {
    p[size_t(e)] = std::exp(logits[e] - mx);
    sum += p[size_t(e)];
  }
  for (int64_t e = 0; e < n_experts; ++e) p[size_t(e)] /= sum;
  std::fill(taken.begin(), taken.end(), 0);
  float chosen_sum = 0.f;
  auto rank = [&](int64_t e) { return std::isnan(p[size_t(e)]) ? -INFINITY : p[size_t(e)]; };
  for (int j = 0; j < k; ++j) {
    int64_t best = -1;
    for (int64_t e = 0; e < n_experts; ++e) {
      if (taken[size_t(e)]) continue;
      if (best < 0 || rank(e) > rank(best)) best = e;
    }
    taken[size_t(best)] = 1;
    ids[j] = int32_t(best);
    weights[j] = p[size_t(best)];
    chosen_sum += weights[j];
  }
  if (renormalize)
    for (int j = 0; j < k; ++j) weights[j] /= chosen_sum;
}

}  // namespace

void CpuBackend::moe_route(Tensor topk_ids, Tensor topk_weights, Tensor router_logits, bool renormalize) {
  op_checks::moe_route(topk_ids, topk_weights, router_logits, Device::cpu);
  f32_only(router_logits, "moe_route router_logits");
  launch([=] {
    const int64_t n = router_logits.size(0), n_experts = router_logits.size(1);
    const int k = int(topk_ids.size(1));
    std::vector<float> p(static_cast<size_t>(n_experts));
    std::vector<char> taken(static_cast<size_t>(n_experts));
    for (int64_t i = 0; i < n; ++i)
      route_row(row_ptr(router_logits, i), n_experts, k, renormalize, topk_ids.ptr<int32_t>() + i * k,
                topk_weights.ptr<float>() + i * k, p, taken);
  });
}

void CpuBackend::moe_experts(Tensor out, Tensor x, Tensor w_gate_up, Tensor w_down, Tensor topk_ids,
                             Tensor topk_weights, const MoeScratch& scratch) {
  // The scratch is for backends that run the experts in passes; one token at a time needs none.
  op_checks::moe_experts(out, x, w_gate_up, w_down, topk_ids, topk_weights, scratch, Device::cpu);
  f32_only(x, "moe_experts x");
  launch([=] {
    const int64_t n = x.size(0), n_experts = w_gate_up.size(0), inter = w_gate_up.size(1) / 2;
    const int64_t hidden = w_gate_up.size(2);
    const int k = int(topk_ids.size(1));
    std::vector<float> act(static_cast<size_t>(inter)), sum(static_cast<size_t>(hidden));
    for (int64_t i = 0; i < n; ++i) {
      const float* xr = row_ptr(x, i);
      std::fill(sum.begin(), sum.end(), 0.f);
      for (int j = 0; j < k; ++j) {
        int32_t e = topk_ids.ptr<int32_t>()[i * k + j];
        if (e < 0 || e >= n_experts) e = 0;  // padded rows may carry anything
        const float wgt = topk_weights.ptr<float>()[i * k + j];
        const float* gu = w_gate_up.ptr<float>() + e * 2 * inter * hidden;  // [2 * inter, hidden]
        for (int64_t r = 0; r < inter; ++r) {
          float g = 0.f, u = 0.f;
          const float* gr = gu + r * hidden;
          const float* ur = gu + (inter + r) * hidden;
          for (int64_t c = 0; c < hidden; ++c) {
            g += xr[c] * gr[c];
            u += xr[c] * ur[c];
          }
          act[size_t(r)] = g / (1.f + std::exp(-g)) * u;
        }
        const float* dn = w_down.ptr<float>() + e * hidden * inter;  // [hidden, inter]
        for (int64_t h = 0; h < hidden; ++h) {
          float y = 0.f;
          for (int64_t r = 0; r < inter; ++r) y += act[size_t(r)] * dn[h * inter + r];
          sum[size_t(h)] += wgt * y;
        }
      }
      float* o = row_ptr(out, i);
      for (int64_t h = 0; h < hidden; ++h) o[h] += sum[size_t(h)];
    }
  });
}

void CpuBackend::moe_shared_expert_add(Tensor out, Tensor y, Tensor gate) {
  op_checks::moe_shared_expert_add(out, y, gate, Device::cpu);
  f32_only(y, "moe_shared_expert_add y");
  launch([=] {
    for (int64_t i = 0; i < y.size(0); ++i) {
      const float g = row_ptr(gate, i)[0];
      const float s = 1.f / (1.f + std::exp(-g));
      const float* yr = row_ptr(y, i);
      float* o = row_ptr(out, i);
      for (int64_t h = 0; h < y.size(1); ++h) o[h] += s * yr[h];
    }
  });
}

}  // namespace seam
