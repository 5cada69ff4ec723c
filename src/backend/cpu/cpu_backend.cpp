#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/cpu/sampling_cpu.h"
#include "backend/op_checks.h"
#include "core/parallel_rows.h"

namespace seam {

namespace {

// Row r of a 2-D (or row-major n-D) float view.
inline float* row_ptr(const Tensor& t, int64_t r) { return t.ptr<float>() + r * t.stride[0]; }

// The CPU backend is the float32 reference: op_checks has checked that the float
// arguments of an op agree; this requires them to be float32.
void f32_only(const Tensor& t, const char* what) {
  SEAM_CHECK(t.dtype == DType::f32, what, ": the cpu backend computes in float32 only, got ", dtype_name(t.dtype));
}

}  // namespace

void* CpuBackend::alloc(size_t bytes) {
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  SEAM_CHECK(p != nullptr || bytes == 0, "cpu: out of memory allocating ", bytes, " bytes");
  return p;
}
void CpuBackend::release(void* p) { std::free(p); }
size_t CpuBackend::free_memory() const { return size_t(1) << 40; }  // host memory: not the limit
void CpuBackend::copy_h2d(void* dst, const void* src, size_t bytes) {
  launch([=] { std::memcpy(dst, src, bytes); });
}
void CpuBackend::copy_d2h(void* dst, const void* src, size_t bytes) {
  launch([=] { std::memcpy(dst, src, bytes); });
}
void CpuBackend::copy_d2d(void* dst, const void* src, size_t bytes) {
  launch([=] { std::memmove(dst, src, bytes); });
}
void CpuBackend::fill(Tensor t, float value) {
  SEAM_CHECK(t.contiguous(), "fill: tensor must be contiguous");
  launch([=] {
    if (t.dtype == DType::f32) {
      std::fill_n(t.ptr<float>(), t.numel(), value);
    } else if (t.dtype == DType::i32) {
      std::fill_n(t.ptr<int32_t>(), t.numel(), int32_t(value));
    } else {
      std::vector<float> v(size_t(t.numel()), value);
      convert_from_f32(v.data(), t.dtype, t.data, v.size());
    }
  });
}

void CpuBackend::launch(std::function<void()> op) {
  if (capturing_)
    recording_.push_back(std::move(op));
  else
    op();
}

// ---------------------------------------------------------------- ops

void CpuBackend::embedding(Tensor out, Tensor ids, Tensor table) {
  op_checks::embedding(out, ids, table, Device::cpu);
  f32_only(table, "embedding table");
  launch([=] {
    const int64_t n = out.size(0), h = out.size(1), vocab = table.size(0);
    for (int64_t i = 0; i < n; ++i) {
      int32_t id = ids.ptr<int32_t>()[i];
      // Padded rows may carry anything; clamp so they never read out of bounds.
      if (id < 0 || id >= vocab) id = 0;
      std::memcpy(row_ptr(out, i), row_ptr(table, id), size_t(h) * 4);
    }
  });
}

namespace {
void rms_norm_row(float* out, const float* x, const float* w, int64_t d, float eps) {
  double ss = 0;
  for (int64_t j = 0; j < d; ++j) ss += double(x[j]) * x[j];
  const float scale = 1.f / std::sqrt(float(ss / double(d)) + eps);
  for (int64_t j = 0; j < d; ++j) out[j] = x[j] * scale * w[j];
}
}  // namespace

void CpuBackend::rms_norm(Tensor out, Tensor x, Tensor weight, float eps) {
  op_checks::rms_norm(out, x, weight, Device::cpu);
  f32_only(x, "rms_norm x");
  launch([=] {
    const int64_t d = x.size(-1), heads = x.ndim == 3 ? x.size(1) : 1;
    for (int64_t i = 0; i < x.size(0); ++i)
      for (int64_t h = 0; h < heads; ++h)
        rms_norm_row(row_ptr(out, i) + h * d, row_ptr(x, i) + h * d, weight.ptr<float>(), d, eps);
  });
}

namespace {
// out[i] = x[i] @ w^T + bias (accumulate: out[i] += that). The sum is formed first and then
// added, so an accumulating linear equals a linear followed by an add, bit for bit. Output
// features are spread over the host's threads (an 8B model's head on the CPU); each element is
// computed as alone, so the result does not depend on the thread count.
void linear_rows(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias, bool accumulate) {
  const int64_t n = x.size(0), n_in = x.size(1), n_out = w.size(0);
  parallel_rows(n_out, 1 + (int64_t(1) << 22) / std::max<int64_t>(1, n_in * n), [&](int64_t j_begin, int64_t j_end) {
    for (int64_t i = 0; i < n; ++i) {
      const float* xr = row_ptr(x, i);
      float* o = row_ptr(out, i);
      for (int64_t j = j_begin; j < j_end; ++j) {
        const float* wr = w.ptr<float>() + j * n_in;
        float acc = 0.f;
        for (int64_t k = 0; k < n_in; ++k) acc += xr[k] * wr[k];
        const float y = acc + (bias.defined() ? bias.ptr<float>()[j] : 0.f);
        o[j] = accumulate ? o[j] + y : y;
      }
    }
  });
}
}  // namespace

void CpuBackend::linear(Tensor out, Tensor x, Tensor w, Tensor bias) {
  op_checks::linear(out, x, w, bias, Device::cpu);
  f32_only(x, "linear x");
  f32_only(out, "linear out");
  if (bias.defined()) f32_only(bias, "linear bias");
  launch([=] { linear_rows(out, x, w, bias, false); });
}

void CpuBackend::linear_accumulate(Tensor out, Tensor x, Tensor w, Tensor bias) {
  op_checks::linear_accumulate(out, x, w, bias, Device::cpu);
  f32_only(x, "linear_accumulate x");
  if (bias.defined()) f32_only(bias, "linear_accumulate bias");
  launch([=] { linear_rows(out, x, w, bias, true); });
}

void CpuBackend::rope(Tensor q, Tensor k, Tensor positions, const RopeTables& t) {
  op_checks::rope(q, k, positions, t, Device::cpu);
  f32_only(q, "rope q");
  const RopeTables tables = t;
  launch([=] {
    const int64_t d = q.size(2), half = tables.inv_freq.size(0);  // rotary_dim / 2; dims >= 2 half pass
    const RopeAngles angles = tables.angles();
    std::vector<float> cs(size_t(2 * half));  // one token's cos then sin
    for (int64_t i = 0; i < q.size(0); ++i) {
      const int32_t position = positions.ptr<int32_t>()[i];
      for (int64_t j = 0; j < half; ++j) {
        const float angle = angles.angle(position, int(j));  // rope_angle.h: double, reduced mod 2 pi
        cs[size_t(j)] = std::cos(angle);
        cs[size_t(half + j)] = std::sin(angle);
      }
      for (const Tensor* x : {&q, &k}) {
        for (int64_t h = 0; h < x->size(1); ++h) {
          float* v = x->ptr<float>() + i * x->stride[0] + h * d;
          for (int64_t j = 0; j < half; ++j) {
            const float c = cs[size_t(j)], s = cs[size_t(half + j)];
            const float a = v[j], b = v[j + half];
            v[j] = a * c - b * s;
            v[j + half] = b * c + a * s;
          }
        }
      }
    }
  });
}

namespace {
float silu(float g) { return g / (1.f + std::exp(-g)); }
// PyTorch gelu(approximate="tanh") in float32.
float gelu_tanh(float g) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  return 0.5f * g * (1.f + std::tanh(kSqrt2OverPi * (g + 0.044715f * g * g * g)));
}
void gated_act_rows(const Tensor& out, const Tensor& gate_up, Activation a) {
  const int64_t inter = out.size(1);
  for (int64_t i = 0; i < out.size(0); ++i) {
    const float* g = row_ptr(gate_up, i);
    float* o = row_ptr(out, i);
    for (int64_t j = 0; j < inter; ++j) {
      const float gate = g[j], up = g[j + inter];  // read both first: out may alias gate
      o[j] = (a == Activation::silu ? silu(gate) : gelu_tanh(gate)) * up;
    }
  }
}
}  // namespace

void CpuBackend::silu_mul(Tensor out, Tensor gate_up) {
  op_checks::silu_mul(out, gate_up, Device::cpu);
  f32_only(out, "silu_mul out");
  launch([=] { gated_act_rows(out, gate_up, Activation::silu); });
}

void CpuBackend::gated_act(Tensor out, Tensor gate_up, Activation a) {
  op_checks::gated_act(out, gate_up, a, Device::cpu);
  f32_only(out, "gated_act out");
  launch([=] { gated_act_rows(out, gate_up, a); });
}

void CpuBackend::scale(Tensor x, float s) {
  op_checks::scale(x, s, Device::cpu);
  f32_only(x, "scale x");
  launch([=] {
    for (int64_t i = 0; i < x.size(0); ++i) {
      float* r = row_ptr(x, i);
      for (int64_t j = 0; j < x.size(1); ++j) r[j] *= s;
    }
  });
}

void CpuBackend::softcap(Tensor x, float cap) {
  op_checks::softcap(x, cap, Device::cpu);
  launch([=] {
    for (int64_t i = 0; i < x.size(0); ++i) {
      float* r = row_ptr(x, i);
      for (int64_t j = 0; j < x.size(1); ++j) r[j] = cap * std::tanh(r[j] / cap);
    }
  });
}

void CpuBackend::rms_norm_add(Tensor residual, Tensor x, Tensor weight, float eps) {
  op_checks::rms_norm_add(residual, x, weight, Device::cpu);
  f32_only(x, "rms_norm_add x");
  launch([=] {
    const int64_t d = x.size(1);
    std::vector<float> normed(static_cast<size_t>(d));
    for (int64_t i = 0; i < x.size(0); ++i) {
      rms_norm_row(normed.data(), row_ptr(x, i), weight.ptr<float>(), d, eps);
      float* r = row_ptr(residual, i);
      for (int64_t j = 0; j < d; ++j) r[j] += normed[size_t(j)];
    }
  });
}

void CpuBackend::store_kv(Tensor k_cache, Tensor v_cache, Tensor k, Tensor v, Tensor slots, KvScales sc) {
  op_checks::store_kv(k_cache, v_cache, k, v, slots, Device::cpu, sc);
  f32_only(k, "store_kv k");
  launch([=] {
    const int64_t width = k.size(1) * k.size(2);
    std::vector<float> scaled(k_cache.dtype == DType::fp8_e4m3 ? size_t(width) : 0);
    // FP8 KV cache: codes of x / scale, rounded to nearest even and saturated (core/fp8.h).
    auto encode = [&](const float* x, float scale, uint8_t* dst) {
      for (int64_t j = 0; j < width; ++j) scaled[size_t(j)] = x[j] / scale;
      convert_from_f32(scaled.data(), DType::fp8_e4m3, dst, size_t(width));
    };
    for (int64_t i = 0; i < k.size(0); ++i) {
      const int32_t s = slots.ptr<int32_t>()[i];
      SEAM_ASSERT(s >= 0 && s < k_cache.size(0), "KV slot ", s, " out of range");
      if (k_cache.dtype == DType::fp8_e4m3) {
        encode(k.ptr<float>() + i * k.stride[0], sc.k, k_cache.ptr<uint8_t>() + s * width);
        encode(v.ptr<float>() + i * v.stride[0], sc.v, v_cache.ptr<uint8_t>() + s * width);
        continue;
      }
      std::memcpy(k_cache.ptr<float>() + s * width, k.ptr<float>() + i * k.stride[0], size_t(width) * 4);
      std::memcpy(v_cache.ptr<float>() + s * width, v.ptr<float>() + i * v.stride[0], size_t(width) * 4);
    }
  });
}

void CpuBackend::attention(Tensor out, Tensor q, Tensor k_cache, Tensor v_cache, const AttentionBatch& b,
                           const AttentionOptions& o) {
  op_checks::attention(out, q, k_cache, v_cache, b, o, Device::cpu);
  f32_only(q, "attention q");
  SEAM_CHECK(b.page_table.contiguous(), "attention page_table: the cpu backend needs it contiguous");
  const AttentionBatch meta = b;
  const AttentionOptions opt = o;
  launch([=] {
    const int64_t n_heads = q.size(1), d = q.size(2), n_kv = k_cache.size(1);
    const int64_t group = n_heads / n_kv, max_ctx = meta.page_table.size(1);
    const int32_t* indptr = meta.qo_indptr.ptr<int32_t>();
    std::vector<float> scores;
    // An FP8 cache is read through a decoded row (code * scale, KvScales); a float cache in place.
    const bool fp8 = k_cache.dtype == DType::fp8_e4m3;
    std::vector<float> k_row(fp8 ? size_t(d) : 0), v_row(fp8 ? size_t(d) : 0);
    auto cache_row = [&](const Tensor& c, int64_t slot, int64_t kvh, std::vector<float>& tmp,
                         float scale) -> const float* {
      const int64_t at = (slot * n_kv + kvh) * d;
      if (!fp8) return c.ptr<float>() + at;
      convert_to_f32(c.ptr<uint8_t>() + at, DType::fp8_e4m3, tmp.data(), size_t(d));
      for (float& x : tmp) x *= scale;
      return tmp.data();
    };
    for (int s = 0; s < meta.n_seqs; ++s) {
      const int32_t begin = indptr[s], end = indptr[s + 1];
      const int32_t seq_len = meta.seq_lens.ptr<int32_t>()[s];
      const int32_t* slots = meta.page_table.ptr<int32_t>() + int64_t(meta.req_rows.ptr<int32_t>()[s]) * max_ctx;
      const int32_t first_pos = seq_len - (end - begin);
      SEAM_ASSERT(first_pos >= 0 && seq_len <= max_ctx, "attention: bad seq_len ", seq_len);
      scores.resize(size_t(seq_len));
      for (int32_t t = begin; t < end; ++t) {
        const int32_t pos = first_pos + (t - begin);
        // Keys [k0, pos]: causal, and inside the window (j > pos - window) when there is one.
        const int32_t k0 = opt.sliding_window > 0 ? std::max(0, pos - opt.sliding_window + 1) : 0;
        for (int64_t h = 0; h < n_heads; ++h) {
          const float* qv = q.ptr<float>() + t * q.stride[0] + h * d;
          const int64_t kvh = h / group;
          float mx = -INFINITY;
          for (int32_t p = k0; p <= pos; ++p) {
            const float* kv = cache_row(k_cache, slots[p], kvh, k_row, opt.kv_scales.k);
            float dot = 0.f;
            for (int64_t j = 0; j < d; ++j) dot += qv[j] * kv[j];
            float score = dot * opt.scale;
            if (opt.logit_softcap > 0.f) score = opt.logit_softcap * std::tanh(score / opt.logit_softcap);
            scores[p] = score;
            mx = std::max(mx, score);
          }
          float sum = 0.f;
          for (int32_t p = k0; p <= pos; ++p) {
            scores[p] = std::exp(scores[p] - mx);
            sum += scores[p];
          }
          float* o = out.ptr<float>() + t * out.stride[0] + h * d;
          std::fill_n(o, d, 0.f);
          for (int32_t p = k0; p <= pos; ++p) {
            const float* vv = cache_row(v_cache, slots[p], kvh, v_row, opt.kv_scales.v);
            const float wgt = scores[p] / sum;
            for (int64_t j = 0; j < d; ++j) o[j] += wgt * vv[j];
          }
        }
      }
    }
  });
}

void CpuBackend::gather_rows(Tensor out, Tensor x, Tensor idx) {
  op_checks::gather_rows(out, x, idx, Device::cpu);
  f32_only(x, "gather_rows x");
  launch([=] {
    for (int64_t i = 0; i < out.size(0); ++i) {  // idx may be longer (op_checks.h)
      int32_t r = idx.ptr<int32_t>()[i];
      if (r < 0 || r >= x.size(0)) r = 0;  // padded rows
      std::memcpy(row_ptr(out, i), row_ptr(x, r), size_t(x.size(1)) * 4);
    }
  });
}

void CpuBackend::scatter_i32(Tensor dst, Tensor pairs) {
  op_checks::scatter_i32(dst, pairs, Device::cpu);
  launch([=] {
    int32_t* d = dst.ptr<int32_t>();
    const int32_t* p = pairs.ptr<int32_t>();
    const int64_t n_dst = dst.numel();
    for (int64_t i = 0; i < pairs.size(0); ++i) {
      SEAM_ASSERT(p[2 * i] >= 0 && p[2 * i] < n_dst, "scatter_i32 index ", p[2 * i], " outside [0, ", n_dst, ")");
      d[p[2 * i]] = p[2 * i + 1];
    }
  });
}

void CpuBackend::apply_penalties(Tensor logits, const PenaltyBatch& p) {
  op_checks::apply_penalties(logits, p, Device::cpu);
  const PenaltyBatch pb = p;
  launch([=] {
    const int64_t vocab = logits.size(1);
    for (int r = 0; r < pb.n; ++r) {
      float* l = row_ptr(logits, r);
      const float freq = pb.frequency.ptr<float>()[r], pres = pb.presence.ptr<float>()[r];
      const float rep = pb.repetition.ptr<float>()[r];
      for (int32_t e = pb.indptr.ptr<int32_t>()[r]; e < pb.indptr.ptr<int32_t>()[r + 1]; ++e) {
        const int32_t tok = pb.tokens.ptr<int32_t>()[e];
        if (tok < 0 || tok >= vocab) continue;
        const int32_t count = pb.out_counts.ptr<int32_t>()[e];
        // HF repetition penalty: divide positive logits, multiply negative ones.
        if (rep != 1.f) l[tok] = l[tok] > 0 ? l[tok] / rep : l[tok] * rep;
        if (count > 0) l[tok] -= freq * float(count) + pres;
      }
    }
  });
}

void CpuBackend::sample(Tensor out_ids, Tensor logits, const SamplingBatch& s) {
  op_checks::sample(out_ids, logits, s, Device::cpu);
  const SamplingBatch sb = s;
  launch([=] {
    for (int r = 0; r < sb.n; ++r) {
      out_ids.ptr<int32_t>()[r] =
          sample_row(row_ptr(logits, r), int(logits.size(1)), sb.temperature.ptr<float>()[r],
                     sb.top_k.ptr<int32_t>()[r], sb.top_p.ptr<float>()[r], sb.min_p.ptr<float>()[r],
                     uint64_t(sb.seed.ptr<int64_t>()[r]), uint32_t(sb.step.ptr<int32_t>()[r]));
    }
  });
}

void CpuBackend::apply_token_bitmask(Tensor logits, Tensor bitmask, Tensor rows) {
  op_checks::apply_token_bitmask(logits, bitmask, rows, Device::cpu);
  launch([=] {
    const int64_t vocab = logits.size(1), n = logits.size(0), n_words = bitmask.size(1);
    for (int64_t i = 0; i < bitmask.size(0); ++i) {
      const int32_t r = rows.ptr<int32_t>()[i];
      SEAM_CHECK(r >= 0 && r < n, "apply_token_bitmask: row ", r, " is outside the ", n, " logit rows");
      const uint32_t* words = reinterpret_cast<const uint32_t*>(bitmask.ptr<int32_t>()) + i * n_words;
      float* l = row_ptr(logits, r);
      for (int64_t t = 0; t < vocab; ++t)
        if (!((words[t >> 5] >> (t & 31)) & 1u)) l[t] = -std::numeric_limits<float>::infinity();
    }
  });
}

void CpuBackend::apply_logit_bias(Tensor logits, const LogitBiasBatch& b) {
  op_checks::apply_logit_bias(logits, b, Device::cpu);
  const LogitBiasBatch bb = b;
  launch([=] {
    const int64_t vocab = logits.size(1);
    for (int r = 0; r < bb.n; ++r) {
      float* l = row_ptr(logits, r);
      for (int32_t e = bb.indptr.ptr<int32_t>()[r]; e < bb.indptr.ptr<int32_t>()[r + 1]; ++e) {
        const int32_t tok = bb.tokens.ptr<int32_t>()[e];
        if (tok >= 0 && tok < vocab) l[tok] += bb.values.ptr<float>()[e];
      }
    }
  });
}

void CpuBackend::logprobs(Tensor logits, const LogprobBatch& b) {
  op_checks::logprobs(logits, b, Device::cpu);
  const LogprobBatch lb = b;
  launch([=] {
    const int64_t max_top = lb.out_top.size(1);
    for (int r = 0; r < lb.n; ++r) {
      const int k = std::min<int>(lb.k.ptr<int32_t>()[r], int(max_top));
      logprobs_row(row_ptr(logits, r), int(logits.size(1)), k, lb.sampled.ptr<int32_t>()[r],
                   lb.out_sampled.ptr<float>() + r, lb.out_top_ids.ptr<int32_t>() + r * max_top,
                   lb.out_top.ptr<float>() + r * max_top);
    }
  });
}

// ---------------------------------------------------------------- graphs

namespace {
struct CpuGraph final : Graph {
  std::vector<std::function<void()>> ops;
};
}  // namespace

void CpuBackend::begin_capture() {
  SEAM_ASSERT(!capturing_, "nested capture");
  capturing_ = true;
  recording_.clear();
}

std::unique_ptr<Graph> CpuBackend::end_capture() {
  SEAM_ASSERT(capturing_, "end_capture without begin_capture");
  capturing_ = false;
  auto g = std::make_unique<CpuGraph>();
  g->ops = std::move(recording_);
  recording_.clear();
  return g;
}

void CpuBackend::replay(const Graph& g) {
  SEAM_ASSERT(!capturing_, "replay while capturing");
  for (const auto& op : static_cast<const CpuGraph&>(g).ops) op();
}

// ---------------------------------------------------------------- step timer

CpuBackend::CpuBackend() {
  if (const char* v = std::getenv("SEAM_CPU_FAULT_AT_STEP")) {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v, &end, 10);
    SEAM_CHECK(end != v && *end == '\0', "SEAM_CPU_FAULT_AT_STEP: '", v, "' is not a step number");
    fault_at_step_ = n;
  }
}

void CpuBackend::timer_begin() {
  SEAM_ASSERT(!capturing_, "step timer marked during graph capture (the mark would be baked into the graph)");
  ++n_steps_;
  if (fault_at_step_ > 0 && fault_kind_ == Fault::internal && n_steps_ == fault_at_step_)
    throw InternalError(detail::concat("injected internal error at step ", n_steps_));
  if (fault_at_step_ > 0 && fault_kind_ == Fault::device && n_steps_ >= fault_at_step_)
    throw DeviceError(detail::concat("injected device fault at step ", n_steps_, " (fault injection from step ",
                                     fault_at_step_, ")"));
  timer_start_ = std::chrono::steady_clock::now();
  timer_stopped_ = false;
}

void CpuBackend::timer_end() {
  SEAM_ASSERT(!capturing_, "step timer marked during graph capture (the mark would be baked into the graph)");
  timer_stop_ = std::chrono::steady_clock::now();
  timer_stopped_ = true;
}

double CpuBackend::timer_elapsed_ms() const {
  SEAM_ASSERT(timer_stopped_, "timer_elapsed_ms without timer_begin and timer_end");
  return std::chrono::duration<double, std::milli>(timer_stop_ - timer_start_).count();
}

}  // namespace seam
