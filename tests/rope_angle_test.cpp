// RoPE's angle (backend/rope_angle.h) against the exact angle: the frequency tables that
// rope_config.cpp computes in double (default, linear, llama3, LongRoPE short and long), split
// into float hi + lo, at positions up to 1,000,000. The reference multiplies and reduces modulo
// 2 pi in long double (64-bit significand), from the double table: it is exact to ~1e-13 rad.
// The CPU rope op is checked to rotate by that angle, and the old float32 angle to miss it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend_factory.h"
#include "backend/rope_angle.h"
#include "model/rope_config.h"

namespace seam {
namespace {

const long double kTwoPiL = 2.0L * std::acos(-1.0L);

// The exact angle of `position` with frequency f, reduced to [-pi, pi].
long double exact_angle(int32_t position, double f) {
  const long double a = static_cast<long double>(position) * static_cast<long double>(f);
  const long double k = std::rint(a / kTwoPiL);
  return a - k * kTwoPiL;
}

// |got - exact| in radians, with the two read modulo 2 pi (near +-pi either side may be chosen).
double angle_error(float got, long double exact) {
  long double e = static_cast<long double>(got) - exact;
  if (e > kTwoPiL / 2) e -= kTwoPiL;
  if (e < -kTwoPiL / 2) e += kTwoPiL;
  return double(std::fabs(e));
}

// One float ulp at |x|; angles below 1/8 rad count with the ulp of 1/8 (7.5e-9 rad): the
// 48-bit frequency hi + lo alone contributes up to 1e6 * 2^-48 = 3.6e-9 rad at position 10^6.
double ulp_at(long double x) {
  const float m = std::max(float(std::fabs(x)), 0.125f);
  return double(std::nextafter(m, std::numeric_limits<float>::infinity()) - m);
}

struct Table {
  std::string name;
  std::vector<double> f;
};

std::vector<Table> tables() {
  std::vector<Table> out;
  RopeConfig mistral;  // Mistral-7B: theta 10000, head_dim 128
  mistral.theta = 10000.0;
  out.push_back({"default_10000_d128", rope_inv_freq_exact(mistral, 128)});
  RopeConfig llama3;  // Llama 3.1
  llama3.theta = 500000.0;
  llama3.scaling.type = RopeType::llama3;
  llama3.scaling.factor = 8.0;
  llama3.scaling.low_freq_factor = 1.0;
  llama3.scaling.high_freq_factor = 4.0;
  llama3.scaling.original_max_position_embeddings = 8192;
  out.push_back({"llama3_d128", rope_inv_freq_exact(llama3, 128)});
  RopeConfig linear;  // Gemma 3's global layers
  linear.theta = 1e6;
  linear.scaling.type = RopeType::linear;
  linear.scaling.factor = 8.0;
  out.push_back({"linear_1e6_d256", rope_inv_freq_exact(linear, 256)});
  RopeConfig longrope;  // Phi-3 128k: factors that are not floats, long ones up to ~60
  longrope.theta = 10000.0;
  longrope.scaling.type = RopeType::longrope;
  longrope.scaling.original_max_position_embeddings = 4096;
  const int rot = 96;
  for (int i = 0; i < rot / 2; ++i) {
    longrope.scaling.short_factor.push_back(1.0 + 0.01 * i);
    longrope.scaling.long_factor.push_back(1.0 + 59.0 * i * i / double((rot / 2 - 1) * (rot / 2 - 1)) + 0.1);
  }
  out.push_back({"longrope_short_d96", rope_inv_freq_exact(longrope, rot)});
  out.push_back({"longrope_long_d96", rope_inv_freq_exact(longrope, rot, /*long_table=*/true)});
  return out;
}

std::vector<int32_t> positions() {
  std::vector<int32_t> p;
  for (int32_t i = 0; i <= 64; ++i) p.push_back(i);
  for (int32_t i = 0; i < 128; ++i) p.push_back(13 + i * 7919);  // up to ~1.0e6
  for (int32_t x : {4095, 4096, 4500, 8191, 32767, 65535, 131071, 524287, 999999, 1000000}) p.push_back(x);
  return p;
}

TEST(RopeAngle, SplitTableKeeps48Bits) {
  for (const Table& t : tables()) {
    std::vector<float> hi, lo;
    split_inv_freq(t.f, hi, lo);
    ASSERT_EQ(hi.size(), t.f.size());
    ASSERT_EQ(lo.size(), t.f.size());
    for (size_t j = 0; j < t.f.size(); ++j) {
      EXPECT_EQ(hi[j], float(t.f[j])) << t.name << " " << j;
      const double rel = std::fabs((double(hi[j]) + double(lo[j])) - t.f[j]) / t.f[j];
      EXPECT_LE(rel, std::ldexp(1.0, -48)) << t.name << " " << j;
    }
  }
}

TEST(RopeAngle, MatchesExactReducedAngleWithinOneUlpUpToOneMillion) {
  const std::vector<int32_t> pos = positions();
  for (const Table& t : tables()) {
    std::vector<float> hi, lo;
    split_inv_freq(t.f, hi, lo);
    double worst = 0, worst_old = 0;
    for (int32_t p : pos)
      for (size_t j = 0; j < t.f.size(); ++j) {
        const long double exact = exact_angle(p, t.f[j]);
        const float got = rope_angle(p, hi[j], lo[j]);
        EXPECT_LE(std::fabs(got), float(M_PI) + 1e-6f) << t.name << " position " << p << " pair " << j;
        const double err = angle_error(got, exact);
        EXPECT_LE(err, ulp_at(exact)) << t.name << " position " << p << " pair " << j << " got " << got;
        worst = std::max(worst, err);
        if (p == 999999) worst_old = std::max(worst_old, angle_error(float(p) * float(t.f[j]), exact));
      }
    // The float32 angle float(position) * float(inv_freq) is far off at a large position
    // (ulp(10^6) = 0.0625 rad): the check above has teeth.
    EXPECT_GT(worst_old, 1e-2) << t.name;
    EXPECT_LE(worst, 2.5e-7) << t.name;
  }
}

TEST(RopeAngle, RopeAnglesPicksTheLongTableFromLongFrom) {
  const std::vector<Table> t = tables();
  std::vector<float> hi, lo, long_hi, long_lo;
  split_inv_freq(t[3].f, hi, lo);
  split_inv_freq(t[4].f, long_hi, long_lo);
  const RopeAngles a{hi.data(), lo.data(), long_hi.data(), long_lo.data(), 4096};
  const RopeAngles no_lo{hi.data(), nullptr, nullptr, nullptr, 0};
  for (size_t j = 0; j < hi.size(); ++j) {
    EXPECT_EQ(a.angle(4095, int(j)), rope_angle(4095, hi[j], lo[j]));
    EXPECT_EQ(a.angle(4096, int(j)), rope_angle(4096, long_hi[j], long_lo[j]));
    EXPECT_EQ(no_lo.angle(4096, int(j)), rope_angle(4096, hi[j], 0.f));
  }
}

// The CPU rope op rotates by the exact angle at positions up to 10^6 (LongRoPE tables, hi + lo
// tensors): within float rounding of cos/sin and the products, 4e-6 on values in [-3, 3]. The
// frequency's lo half moves the angle by up to position * |lo| (~0.03 rad at 10^6): without it
// (or with a float32 angle) the values would miss by far more.
TEST(RopeAngle, CpuRopeRotatesByTheExactAngle) {
  const std::vector<Table> t = tables();
  std::vector<float> hi, lo, long_hi, long_lo;
  split_inv_freq(t[3].f, hi, lo);
  split_inv_freq(t[4].f, long_hi, long_lo);
  const int64_t half = int64_t(hi.size()), d = 2 * half + 4, heads = 2, kv = 1;
  std::vector<int32_t> pos = {3, 4095, 4096, 65537, 524287, 999999, 1000000};
  const int64_t n = int64_t(pos.size());
  std::vector<float> q(size_t(n * heads * d)), k(size_t(n * kv * d));
  for (size_t i = 0; i < q.size(); ++i) q[i] = float(std::sin(0.37 * double(i)) * 3.0);
  for (size_t i = 0; i < k.size(); ++i) k[i] = float(std::cos(0.91 * double(i)) * 3.0);
  const std::vector<float> q0 = q, k0 = k;
  const auto view = [](std::vector<float>& v, std::initializer_list<int64_t> dims) {
    return Tensor(v.data(), DType::f32, Device::cpu, dims);
  };
  const RopeTables tb(view(hi, {half}), view(long_hi, {half}), 4096, view(lo, {half}), view(long_lo, {half}));
  std::unique_ptr<Backend> cpu = make_backend(Device::cpu);
  cpu->rope(view(q, {n, heads, d}), view(k, {n, kv, d}), Tensor(pos.data(), DType::i32, Device::cpu, {n}), tb);
  cpu->synchronize();
  auto check = [&](const std::vector<float>& got, const std::vector<float>& orig, int64_t h_count) {
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      const std::vector<double>& f = pos[size_t(i)] >= 4096 ? t[4].f : t[3].f;
      for (int64_t h = 0; h < h_count; ++h) {
        const float* o = orig.data() + (i * h_count + h) * d;
        const float* g = got.data() + (i * h_count + h) * d;
        for (int64_t j = 0; j < half; ++j) {
          const long double ang = exact_angle(pos[size_t(i)], f[size_t(j)]);
          const long double c = std::cos(ang), s = std::sin(ang);
          worst = std::max(worst, double(std::fabs(g[j] - (o[j] * c - o[j + half] * s))));
          worst = std::max(worst, double(std::fabs(g[j + half] - (o[j + half] * c + o[j] * s))));
        }
        for (int64_t j = 2 * half; j < d; ++j) EXPECT_EQ(g[j], o[j]) << "pass-through dim " << j;
      }
    }
    EXPECT_LE(worst, 4e-6);
  };
  check(q, q0, heads);
  check(k, k0, kv);
}

// op_checks: a lo table must match inv_freq's shape, and a long lo needs the long table.
TEST(RopeAngle, LoTablesAreChecked) {
  std::unique_ptr<Backend> cpu = make_backend(Device::cpu);
  std::vector<float> q(2 * 8), k(2 * 8), f(4, 1.f), f_bad(3, 0.f);
  std::vector<int32_t> pos = {1, 2};
  const Tensor tq(q.data(), DType::f32, Device::cpu, {2, 1, 8}), tk(k.data(), DType::f32, Device::cpu, {2, 1, 8});
  const Tensor tp(pos.data(), DType::i32, Device::cpu, {2});
  const Tensor tf(f.data(), DType::f32, Device::cpu, {4}), tbad(f_bad.data(), DType::f32, Device::cpu, {3});
  const auto msg = [&](const RopeTables& t) {
    try {
      cpu->rope(tq, tk, tp, t);
      cpu->synchronize();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(msg(RopeTables(tf, Tensor(), 0, tf, Tensor())), "");
  EXPECT_NE(msg(RopeTables(tf, Tensor(), 0, tbad, Tensor())).find("rope inv_freq_lo"), std::string::npos);
  EXPECT_NE(msg(RopeTables(tf, Tensor(), 0, tf, tf)).find("rope inv_freq_long_lo"), std::string::npos);
  EXPECT_NE(msg(RopeTables(tf, tf, 0, tf, tbad)).find("rope inv_freq_long_lo"), std::string::npos);
}

}  // namespace
}  // namespace seam
