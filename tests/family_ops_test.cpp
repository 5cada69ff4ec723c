// The CPU reference of the ops the Gemma / Phi / Mistral families need (issue 24), each against
// a direct float64 formula: gated_act (silu, gelu_tanh), scale, softcap, rms_norm_add, rope with
// partial rotary and LongRoPE tables, and attention with a sliding window and logit soft-capping
// (vs a naive loop). Keys outside the window are poisoned with NaN: attention must not read them.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "backend/backend_factory.h"
#include "core/error.h"

namespace seam {
namespace {

class FamilyOps : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> cpu = make_backend(Device::cpu);
  std::mt19937 rng{1234};

  std::vector<float> random(size_t n, float lo = -3.f, float hi = 3.f) {
    std::uniform_real_distribution<float> u(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = u(rng);
    return v;
  }
  static Tensor view(std::vector<float>& v, std::initializer_list<int64_t> dims) {
    return Tensor(v.data(), DType::f32, Device::cpu, dims);
  }
  static Tensor index(std::vector<int32_t>& v) {
    return Tensor(v.data(), DType::i32, Device::cpu, {int64_t(v.size())});
  }
};

double gelu_tanh64(double x) { return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }
double silu64(double x) { return x / (1.0 + std::exp(-x)); }

TEST_F(FamilyOps, GatedActMatchesFormulaOnStridedRows) {
  const int64_t n = 5, inter = 37, pitch = 2 * inter + 6;  // gate_up rows strided
  for (Activation a : {Activation::silu, Activation::gelu_tanh}) {
    std::vector<float> gu = random(size_t(n * pitch), -6.f, 6.f), out(size_t(n * inter), -99.f);
    Tensor gu_t = view(gu, {n, pitch}).slice_cols(0, 2 * inter);
    cpu->gated_act(view(out, {n, inter}), gu_t, a);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < inter; ++j) {
        const double g = gu[size_t(i * pitch + j)], u = gu[size_t(i * pitch + inter + j)];
        const double want = (a == Activation::silu ? silu64(g) : gelu_tanh64(g)) * u;
        EXPECT_NEAR(out[size_t(i * inter + j)], want, 1e-5 * (1 + std::abs(want))) << activation_name(a);
      }
  }
  // gelu_tanh differs from silu (the test would catch a swapped activation).
  EXPECT_GT(std::abs(gelu_tanh64(1.0) - silu64(1.0)), 0.1);
}

TEST_F(FamilyOps, SiluMulEqualsGatedActSilu) {
  const int64_t n = 3, inter = 16;
  std::vector<float> gu = random(size_t(n * 2 * inter)), a(size_t(n * inter)), b(size_t(n * inter));
  cpu->silu_mul(view(a, {n, inter}), view(gu, {n, 2 * inter}));
  cpu->gated_act(view(b, {n, inter}), view(gu, {n, 2 * inter}), Activation::silu);
  EXPECT_EQ(a, b);
}

TEST_F(FamilyOps, ScaleAndSoftcap) {
  const int64_t n = 4, d = 33, pitch = 40;
  std::vector<float> x = random(size_t(n * pitch), -80.f, 80.f), orig = x;
  cpu->scale(view(x, {n, pitch}).slice_cols(0, d), 2.5f);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < pitch; ++j) {
      const size_t e = size_t(i * pitch + j);
      EXPECT_FLOAT_EQ(x[e], j < d ? orig[e] * 2.5f : orig[e]);  // padding columns untouched
    }
  x = orig;
  cpu->softcap(view(x, {n, pitch}), 30.f);
  for (size_t e = 0; e < x.size(); ++e) {
    EXPECT_NEAR(x[e], 30.0 * std::tanh(double(orig[e]) / 30.0), 1e-4);
    EXPECT_LT(std::abs(x[e]), 30.f);
  }
  EXPECT_THROW(cpu->softcap(view(x, {n, pitch}), 0.f), Error);
  EXPECT_THROW(cpu->scale(view(x, {n, pitch}), std::numeric_limits<float>::infinity()), Error);
}

TEST_F(FamilyOps, RmsNormAddAddsTheNormedRows) {
  const int64_t n = 3, d = 24, pitch = 30;
  std::vector<float> x = random(size_t(n * pitch)), w = random(size_t(d)), res = random(size_t(n * d));
  const std::vector<float> res0 = res;
  cpu->rms_norm_add(view(res, {n, d}), view(x, {n, pitch}).slice_cols(0, d), view(w, {d}), 1e-6f);
  for (int64_t i = 0; i < n; ++i) {
    double ss = 0;
    for (int64_t j = 0; j < d; ++j) ss += double(x[size_t(i * pitch + j)]) * x[size_t(i * pitch + j)];
    const double inv = 1.0 / std::sqrt(ss / double(d) + 1e-6);
    for (int64_t j = 0; j < d; ++j) {
      const double want = res0[size_t(i * d + j)] + x[size_t(i * pitch + j)] * inv * w[size_t(j)];
      EXPECT_NEAR(res[size_t(i * d + j)], want, 1e-5 * (1 + std::abs(want)));
    }
  }
  // residual overlapping x is refused (the op reads x's whole row before adding).
  EXPECT_THROW(cpu->rms_norm_add(view(x, {n, pitch}).slice_cols(0, d), view(x, {n, pitch}).slice_cols(0, d),
                                 view(w, {d}), 1e-6f),
               Error);
}

// rope with rotary_dim < head_dim and two LongRoPE tables: positions below long_from use the
// short table, the others the long one; dims past rotary_dim pass through.
TEST_F(FamilyOps, RopePartialRotaryAndLongTables) {
  const int64_t n = 4, heads = 2, kv = 1, d = 16, rot = 12, half = rot / 2;
  std::vector<float> q = random(size_t(n * heads * d)), k = random(size_t(n * kv * d));
  const std::vector<float> q0 = q, k0 = k;
  std::vector<float> f_short(static_cast<size_t>(half)), f_long(static_cast<size_t>(half));
  for (int64_t j = 0; j < half; ++j) {
    f_short[size_t(j)] = std::pow(10000.f, -2.f * float(j) / float(rot));
    f_long[size_t(j)] = f_short[size_t(j)] / (1.f + float(j));  // distinct per dim
  }
  std::vector<int32_t> pos = {0, 3, 7, 100};
  const int long_from = 7;
  cpu->rope(view(q, {n, heads, d}), view(k, {n, kv, d}), index(pos),
            RopeTables(view(f_short, {half}), view(f_long, {half}), long_from));
  auto check = [&](const std::vector<float>& got, const std::vector<float>& orig, int64_t h_count) {
    for (int64_t i = 0; i < n; ++i)
      for (int64_t h = 0; h < h_count; ++h) {
        const float* o = orig.data() + (i * h_count + h) * d;
        const float* g = got.data() + (i * h_count + h) * d;
        const std::vector<float>& f = pos[size_t(i)] >= long_from ? f_long : f_short;
        for (int64_t j = 0; j < half; ++j) {
          const double ang = double(pos[size_t(i)]) * f[size_t(j)];
          EXPECT_NEAR(g[j], o[j] * std::cos(ang) - o[j + half] * std::sin(ang), 1e-4);
          EXPECT_NEAR(g[j + half], o[j + half] * std::cos(ang) + o[j] * std::sin(ang), 1e-4);
        }
        for (int64_t j = rot; j < d; ++j) EXPECT_EQ(g[j], o[j]) << "pass-through dim " << j;
      }
  };
  check(q, q0, heads);
  check(k, k0, kv);
  // Tables longer than head_dim / 2, odd head dims and mismatched long tables are refused.
  std::vector<float> big(static_cast<size_t>(d / 2 + 1));
  EXPECT_THROW(cpu->rope(view(q, {n, heads, d}), view(k, {n, kv, d}), index(pos), view(big, {d / 2 + 1})), Error);
  EXPECT_THROW(cpu->rope(view(q, {n, heads, d}), view(k, {n, kv, d}), index(pos),
                         RopeTables(view(f_short, {half}), view(big, {half + 1}), 1)),
               Error);
}

// rms_norm_qkv_qk_norm_rope_store (the q/k-norm families' attention input stage in one op) is its
// definition: rms_norm_linear, then qk_norm_rope_store on qkv's q, k, v views, to the bit.
TEST_F(FamilyOps, QkvQkNormRopeStoreEqualsItsTwoOps) {
  const int64_t n = 2, hidden = 24, heads = 3, kv = 1, d = 8, rot = 6, half = rot / 2, width = (heads + 2 * kv) * d;
  const int64_t n_slots = 4;
  std::vector<float> x = random(size_t(n * hidden)), ln = random(size_t(hidden), 0.5f, 1.5f);
  std::vector<float> w = random(size_t(width * hidden), -0.3f, 0.3f), qn = random(size_t(d), 0.5f, 1.5f);
  std::vector<float> kn = random(size_t(d), 0.5f, 1.5f), f(static_cast<size_t>(half));
  for (int64_t j = 0; j < half; ++j) f[size_t(j)] = std::pow(10000.f, -2.f * float(j) / float(rot));
  std::vector<int32_t> pos = {5, 9}, slots = {3, 1};
  auto run = [&](bool fused, std::vector<float>& qkv, std::vector<float>& kc, std::vector<float>& vc) {
    std::vector<float> normed(size_t(n * hidden));
    qkv.assign(size_t(n * width), 0.f);
    kc.assign(size_t(n_slots * kv * d), 0.f);
    vc.assign(kc.size(), 0.f);
    RopeStoreArgs r;
    r.n_heads = int(heads);
    r.positions = index(pos);
    r.inv_freq = view(f, {half});
    r.k_cache = view(kc, {n_slots, kv, d});
    r.v_cache = view(vc, {n_slots, kv, d});
    r.slots = index(slots);
    if (fused) {
      cpu->rms_norm_qkv_qk_norm_rope_store(view(qkv, {n, width}), view(normed, {n, hidden}), view(x, {n, hidden}),
                                           view(ln, {hidden}), 1e-6f, view(w, {width, hidden}), Tensor(),
                                           view(qn, {d}), view(kn, {d}), r);
      return;
    }
    cpu->rms_norm_linear(view(qkv, {n, width}), view(normed, {n, hidden}), view(x, {n, hidden}), view(ln, {hidden}),
                         1e-6f, view(w, {width, hidden}), Tensor());
    const RopeStoreArgs::Qkv h = r.split_qkv(view(qkv, {n, width}));
    cpu->qk_norm_rope_store(h.q, h.k, h.v, view(qn, {d}), view(kn, {d}), 1e-6f, r.positions, r.tables(), r.k_cache,
                            r.v_cache, r.slots);
  };
  std::vector<float> qkv, kc, vc, qkv2, kc2, vc2;
  run(true, qkv, kc, vc);
  run(false, qkv2, kc2, vc2);
  EXPECT_EQ(qkv, qkv2);
  EXPECT_EQ(kc, kc2);
  EXPECT_EQ(vc, vc2);
  EXPECT_NE(kc, std::vector<float>(kc.size(), 0.f)) << "the slots were not written";
}

// One attention call over a paged cache vs a naive float64 loop, for every combination of
// window and soft-cap; a prefill sequence and decode rows in one batch (mixed step).
struct AttnCase {
  int window;
  float softcap;
};

TEST_F(FamilyOps, AttentionWindowAndSoftcapMatchNaiveLoop) {
  const int64_t heads = 4, kv = 2, d = 8, group = heads / kv;
  // seq 0: prefill of 9 new tokens after 4 cached; seq 1, 2: decode rows at lengths 13, 3.
  std::vector<int32_t> seq_lens = {13, 13, 3}, qo = {0, 9, 10, 11}, req_rows = {2, 0, 1};
  const int n_tokens = 11, max_ctx = 16, n_slots = 3 * max_ctx;
  std::vector<int32_t> page_table(size_t(3 * max_ctx));
  for (size_t i = 0; i < page_table.size(); ++i) page_table[i] = int32_t((i * 7 + 5) % size_t(n_slots));  // shuffled
  for (AttnCase c :
       {AttnCase{0, 0.f}, AttnCase{4, 0.f}, AttnCase{0, 5.f}, AttnCase{4, 5.f}, AttnCase{1, 0.f}, AttnCase{100, 2.f}}) {
    std::vector<float> q = random(size_t(n_tokens * heads * d)), kc = random(size_t(n_slots * kv * d)),
                       vc = random(size_t(n_slots * kv * d)), out(size_t(n_tokens * heads * d));
    // Poison every key / value outside each sequence's widest window: they must not be read.
    std::vector<bool> needed(size_t(n_slots), false);
    for (int s = 0; s < 3; ++s) {
      const int first_q = seq_lens[size_t(s)] - (qo[size_t(s) + 1] - qo[size_t(s)]);
      const int lo = c.window > 0 ? std::max(0, first_q - c.window + 1) : 0;
      for (int p = lo; p < seq_lens[size_t(s)]; ++p)
        needed[size_t(page_table[size_t(req_rows[size_t(s)] * max_ctx + p)])] = true;
    }
    for (int slot = 0; slot < n_slots; ++slot)
      if (!needed[size_t(slot)])
        for (int64_t e = 0; e < kv * d; ++e) kc[size_t(slot * kv * d + e)] = vc[size_t(slot * kv * d + e)] = NAN;
    AttentionBatch b;
    b.n_tokens = n_tokens;
    b.n_seqs = 3;
    b.n_prefill_seqs = 1;
    b.n_prefill_tokens = 9;
    b.max_seq_len = 13;
    b.qo_indptr = index(qo);
    b.seq_lens = index(seq_lens);
    b.req_rows = index(req_rows);
    b.page_table = Tensor(page_table.data(), DType::i32, Device::cpu, {3, max_ctx});
    AttentionOptions o;
    o.scale = 0.4f;
    o.sliding_window = c.window;
    o.logit_softcap = c.softcap;
    cpu->attention(view(out, {n_tokens, heads, d}), view(q, {n_tokens, heads, d}), view(kc, {n_slots, kv, d}),
                   view(vc, {n_slots, kv, d}), b, o);
    for (int s = 0; s < 3; ++s) {
      const int n_new = qo[size_t(s) + 1] - qo[size_t(s)];
      for (int t = 0; t < n_new; ++t) {
        const int row = qo[size_t(s)] + t, pos = seq_lens[size_t(s)] - n_new + t;
        for (int64_t h = 0; h < heads; ++h) {
          std::vector<double> w;
          std::vector<int> keys;
          for (int j = 0; j <= pos; ++j) {
            if (c.window > 0 && !(j > pos - c.window)) continue;  // HF: kv_idx > q_idx - window
            const int slot = page_table[size_t(req_rows[size_t(s)] * max_ctx + j)];
            double dot = 0;
            for (int64_t e = 0; e < d; ++e)
              dot += double(q[size_t((row * heads + h) * d + e)]) * kc[size_t((slot * kv + h / group) * d + e)];
            double score = dot * 0.4;
            if (c.softcap > 0) score = c.softcap * std::tanh(score / c.softcap);
            w.push_back(score);
            keys.push_back(slot);
          }
          ASSERT_LE(int(keys.size()), c.window > 0 ? c.window : pos + 1);
          double mx = -INFINITY, sum = 0;
          for (double x : w) mx = std::max(mx, x);
          for (double& x : w) sum += (x = std::exp(x - mx));
          for (int64_t e = 0; e < d; ++e) {
            double want = 0;
            for (size_t j = 0; j < keys.size(); ++j)
              want += w[j] / sum * vc[size_t((keys[j] * kv + h / group) * d + e)];
            EXPECT_NEAR(out[size_t((row * heads + h) * d + e)], want, 2e-5)
                << "window " << c.window << " softcap " << c.softcap << " seq " << s << " token " << t;
          }
        }
      }
    }
  }
}

TEST_F(FamilyOps, AttentionOptionsAreChecked) {
  std::vector<float> q(8), kc(8), vc(8), out(8);
  std::vector<int32_t> qo = {0, 1}, lens = {1}, rows = {0}, pt = {0};
  AttentionBatch b;
  b.n_tokens = 1;
  b.n_seqs = 1;
  b.qo_indptr = index(qo);
  b.seq_lens = index(lens);
  b.req_rows = index(rows);
  b.page_table = Tensor(pt.data(), DType::i32, Device::cpu, {1, 1});
  auto run = [&](AttentionOptions o) {
    cpu->attention(view(out, {1, 1, 8}), view(q, {1, 1, 8}), view(kc, {1, 1, 8}), view(vc, {1, 1, 8}), b, o);
  };
  run(AttentionOptions{1.f, 0, 0.f});
  EXPECT_THROW(run(AttentionOptions{1.f, -1, 0.f}), Error);
  EXPECT_THROW(run(AttentionOptions{1.f, 0, -2.f}), Error);
  EXPECT_THROW(run(AttentionOptions{NAN, 0, 0.f}), Error);
}

}  // namespace
}  // namespace seam
