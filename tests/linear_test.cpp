// Linear on the cpu backend: fused parts load in output order and convert to the layer's
// weight format; each method is exactly the backend op it names (bit-identical to calling
// the op on the same weight); a tied layer shares the embedding's memory.
#include "model/linear.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"

namespace seam {
namespace {

// A host tensor over `values` (kept alive by the caller), stored as `dtype`.
struct HostParts {
  std::vector<std::vector<uint16_t>> half;  // storage of converted parts
  HostTensor make(const std::string& name, const std::vector<float>& values, std::vector<int64_t> shape,
                  DType dtype = DType::f32) {
    HostTensor t;
    t.name = name;
    t.dtype = dtype;
    t.shape = std::move(shape);
    if (dtype == DType::f32) {
      t.data = values.data();
    } else {
      half.emplace_back(values.size());
      convert_from_f32(values.data(), dtype, half.back().data(), values.size());
      t.data = half.back().data();
    }
    return t;
  }
};

std::vector<float> ramp(size_t n, float scale, float offset) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * std::sin(0.7f * float(i) + offset);
  return v;
}

Tensor view(std::vector<float>& v, std::initializer_list<int64_t> dims) {
  return Tensor(v.data(), DType::f32, Device::cpu, dims);
}

TEST(Linear, FusedPartsStackAlongTheOutputDimWithTheirBias) {
  CpuBackend be;
  const int64_t in = 6, n = 3;
  std::vector<float> wq = ramp(4 * in, 0.5f, 0.f), wk = ramp(2 * in, 0.5f, 1.f), wv = ramp(2 * in, 0.5f, 2.f);
  std::vector<float> bq = ramp(4, 0.1f, 3.f), bk = ramp(2, 0.1f, 4.f), bv = ramp(2, 0.1f, 5.f);
  HostParts hp;
  HostTensor q = hp.make("q", wq, {4, in}), k = hp.make("k", wk, {2, in}), v = hp.make("v", wv, {2, in});
  HostTensor qb = hp.make("qb", bq, {4}), kb = hp.make("kb", bk, {2}), vb = hp.make("vb", bv, {2});
  const Linear l = Linear::load(be, {&q, &k, &v}, {&qb, &kb, &vb}, WeightFormat::f32);
  EXPECT_EQ(l.format(), WeightFormat::f32);
  EXPECT_EQ(l.out_features(), 8);
  EXPECT_EQ(l.in_features(), in);
  EXPECT_TRUE(l.has_bias());
  EXPECT_EQ(l.bytes(), size_t(8 * in + 8) * 4);

  std::vector<float> x = ramp(size_t(n * in), 1.f, 0.3f), out(size_t(n * 8));
  l.apply(view(out, {n, 8}), view(x, {n, in}));
  // Reference: rows 0..3 are q, 4..5 k, 6..7 v, each with its own bias.
  const std::vector<const std::vector<float>*> w_rows = {&wq, &wk, &wv}, b_rows = {&bq, &bk, &bv};
  const int64_t first[] = {0, 4, 6, 8};
  for (int64_t r = 0; r < n; ++r)
    for (int part = 0; part < 3; ++part)
      for (int64_t o = first[part]; o < first[part + 1]; ++o) {
        double ref = (*b_rows[size_t(part)])[size_t(o - first[part])];
        for (int64_t i = 0; i < in; ++i)
          ref += double(x[size_t(r * in + i)]) * (*w_rows[size_t(part)])[size_t((o - first[part]) * in + i)];
        EXPECT_NEAR(out[size_t(r * 8 + o)], ref, 1e-5) << "row " << r << " output " << o;
      }
}

TEST(Linear, EachMethodIsExactlyItsBackendOp) {
  CpuBackend be;
  const int64_t in = 8, out_f = 6, n = 2;
  std::vector<float> w = ramp(size_t(out_f * in), 0.4f, 0.f), b = ramp(size_t(out_f), 0.2f, 1.f);
  std::vector<float> norm_w = ramp(size_t(in), 0.3f, 2.f);
  for (float& x : norm_w) x += 1.f;
  HostParts hp;
  HostTensor ht = hp.make("w", w, {out_f, in}), hb = hp.make("b", b, {out_f});
  const Linear with_bias = Linear::load(be, {&ht}, {&hb}, WeightFormat::f32);
  const Linear no_bias = Linear::load(be, {&ht}, {}, WeightFormat::f32);
  EXPECT_FALSE(no_bias.has_bias());
  EXPECT_FALSE(no_bias.bias().defined());
  const Tensor W = view(w, {out_f, in}), B = view(b, {out_f});
  std::vector<float> x = ramp(size_t(n * in), 1.f, 0.5f);
  const Tensor X = view(x, {n, in});
  auto same = [](const std::vector<float>& a, const std::vector<float>& c, const std::string& what) {
    ASSERT_EQ(a.size(), c.size());
    EXPECT_EQ(std::memcmp(a.data(), c.data(), a.size() * 4), 0) << what;
  };
  {
    std::vector<float> got(size_t(n * out_f)), want(got.size());
    with_bias.apply(view(got, {n, out_f}), X);
    be.linear(view(want, {n, out_f}), X, W, B);
    same(got, want, "apply == linear");
  }
  {
    std::vector<float> got = ramp(size_t(n * out_f), 1.f, 3.f), want = got;
    with_bias.accumulate(view(got, {n, out_f}), X);
    be.linear_accumulate(view(want, {n, out_f}), X, W, B);
    same(got, want, "accumulate == linear_accumulate");
  }
  {
    std::vector<float> got(size_t(n * out_f)), want(got.size()), normed(size_t(n * in)), normed2(normed.size());
    with_bias.apply_rms_normed(view(got, {n, out_f}), view(normed, {n, in}), X, view(norm_w, {in}), 1e-5f);
    be.rms_norm_linear(view(want, {n, out_f}), view(normed2, {n, in}), X, view(norm_w, {in}), 1e-5f, W, B);
    same(got, want, "apply_rms_normed == rms_norm_linear");
  }
  {
    // gate_up: out_f = 2 * inter with inter = 3
    std::vector<float> act(size_t(n * 3)), act2(act.size()), gu(size_t(n * out_f)), gu2(gu.size());
    std::vector<float> normed(size_t(n * in)), normed2(normed.size());
    for (Activation a : {Activation::silu, Activation::gelu_tanh}) {
      no_bias.apply_rms_normed_act(view(act, {n, 3}), view(gu, {n, out_f}), view(normed, {n, in}), X,
                                   view(norm_w, {in}), 1e-5f, a);
      be.rms_norm_gate_up_act(view(act2, {n, 3}), view(gu2, {n, out_f}), view(normed2, {n, in}), X,
                              view(norm_w, {in}), 1e-5f, W, a);
      same(act, act2, std::string("apply_rms_normed_act == rms_norm_gate_up_act, ") + activation_name(a));
    }
    EXPECT_THROW(with_bias.apply_rms_normed_act(view(act, {n, 3}), view(gu, {n, out_f}), view(normed, {n, in}), X,
                                                view(norm_w, {in}), 1e-5f, Activation::silu),
                 Error)
        << "the fused gate_up op has no bias: a biased layer may not silently drop it";
  }
}

TEST(Linear, WeightsConvertOnceToTheLayersFormat) {
  CpuBackend be;
  std::vector<float> w = ramp(12, 0.9f, 0.f);
  HostParts hp;
  HostTensor bf = hp.make("w_bf16", w, {3, 4}, DType::bf16);
  const Linear l = Linear::load(be, {&bf}, {}, WeightFormat::f32);
  EXPECT_EQ(l.weight().dtype, DType::f32);
  EXPECT_EQ(l.bytes(), 12u * 4u);
  for (int64_t i = 0; i < 12; ++i)
    EXPECT_EQ(l.weight().ptr<float>()[i], bf16_to_f32(f32_to_bf16(w[size_t(i)]))) << "element " << i;
}

TEST(Linear, SharedLayerUsesTheEmbeddingsMemory) {
  CpuBackend be;
  std::vector<float> e = ramp(5 * 4, 1.f, 0.f);
  HostParts hp;
  HostTensor he = hp.make("embed", e, {5, 4});
  const DeviceWeight embed = DeviceWeight::upload(be, {&he}, DType::f32);
  const Linear head = Linear::shared(be, embed, WeightFormat::f32);
  EXPECT_EQ(head.weight().data, embed.tensor().data) << "tied: one matrix, no copy";
  EXPECT_EQ(head.out_features(), 5);
  EXPECT_FALSE(head.has_bias());
  EXPECT_THROW(Linear::shared(be, embed, WeightFormat::bf16), Error) << "the stored dtype must match the format";
}

TEST(WeightFormat, DenseFormatsFollowTheComputeDtype) {
  EXPECT_EQ(dense_weight_format(DType::f32), WeightFormat::f32);
  EXPECT_EQ(dense_weight_format(DType::f16), WeightFormat::f16);
  EXPECT_EQ(dense_weight_format(DType::bf16), WeightFormat::bf16);
  for (WeightFormat f : {WeightFormat::f32, WeightFormat::f16, WeightFormat::bf16})
    EXPECT_EQ(dense_weight_format(weight_format_dtype(f)), f) << weight_format_name(f);
  EXPECT_THROW(dense_weight_format(DType::i32), Error);
}

}  // namespace
}  // namespace seam
