// RoPE's rotation angle of one (position, frequency) pair: the one definition that the CPU
// backend and every CUDA kernel compute (SEAM_HD), so that they agree bit for bit on it.
//
// Why not float(position) * inv_freq in float32: the angle reaches thousands of radians
// (4,500 rad at position 4,500 for the first pair), and its float32 rounding alone
// (ulp(4500) = 4.9e-4 rad), plus inv_freq rounded to float32 (relative 6e-8), was the whole
// float32 logit gap to exact arithmetic measured on Mistral-7B at a 4.5k-token prompt.
//
// The definition here:
//   1. inv_freq is computed in double (rope_inv_freq_exact) and stored as two floats hi + lo
//      (split_inv_freq: hi = float(f), lo = float(f - hi)), 48 significant bits: relative
//      error <= 2^-48. A table without lo (lo == nullptr) means lo = 0 (the float is exact).
//   2. a = position * (hi + lo) in double, as fma(p, hi, p * lo): one rounding each.
//   3. a is reduced modulo 2 pi in double (Cody-Waite with a two-part 2 pi):
//        k = rint(a / 2pi);  r = fma(-k, 2pi_hi, a);  r = fma(-k, 2pi_lo, r),  r in [-pi, pi]
//      (for |a| >= 4 the first fma is exact: a and k * 2pi_hi are multiples of ulp(2pi_hi)
//      and |r| < 8; below, k is 0 or +-1 and it rounds once).
//   4. float(r): the only float rounding, <= 2^-24 * pi ~ 1.9e-7 rad at any position.
// The absolute error of r is position * |inv_freq| * 2^-48 (+ a few double ulps), i.e.
// 3.6e-9 rad at position 10^6 with inv_freq 1: float(r) is the float rounding of the exact
// reduced angle within one ulp (tests/rope_angle_test.cpp, positions up to 10^6; the bound
// holds to ~10^7, past any context window; beyond, the error grows as position * 2^-48). Every step is a single IEEE operation written out (explicit
// fma, no a * b + c that a compiler could contract differently on host and device), so the
// CPU and CUDA results are identical.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#ifndef SEAM_HD
#if defined(__CUDACC__)
#define SEAM_HD __host__ __device__
#else
#define SEAM_HD
#endif
#endif

namespace seam {

// 2 pi = kTwoPiHi + kTwoPiLo to ~2^-106 relative (kTwoPiHi = double(2 pi)).
inline constexpr double kTwoPiHi = 6.283185307179586232e+00;
inline constexpr double kTwoPiLo = 2.449293598294706414e-16;
inline constexpr double kInvTwoPi = 1.591549430918953358e-01;

// The reduced angle (step 2-4 above) of `position` with the frequency hi + lo.
SEAM_HD inline float rope_angle(int32_t position, float hi, float lo) {
  const double p = double(position);
  const double a = fma(p, double(hi), p * double(lo));
  const double k = rint(a * kInvTwoPi);
  double r = fma(-k, kTwoPiHi, a);
  r = fma(-k, kTwoPiLo, r);
  return float(r);
}

// The rotary tables as kernels and the CPU loop read them (RopeTables::angles()): raw
// pointers, device or host. A token at position >= long_from uses the long table when it is
// set. The lo tables may be null (0).
struct RopeAngles {
  const float* hi = nullptr;       // [rotary_dim / 2]
  const float* lo = nullptr;       // [rotary_dim / 2] or null
  const float* long_hi = nullptr;  // [rotary_dim / 2] or null: LongRoPE's long table
  const float* long_lo = nullptr;  // [rotary_dim / 2] or null
  int long_from = 0;

  // The angle of pair j (< rotary_dim / 2) of a token at `position`.
  SEAM_HD float angle(int32_t position, int j) const {
    const bool use_long = long_hi != nullptr && position >= long_from;
    const float* h = use_long ? long_hi : hi;
    const float* l = use_long ? long_lo : lo;
    return rope_angle(position, h[j], l != nullptr ? l[j] : 0.f);
  }
};

// Splits double frequencies into the float pairs of step 1: hi[i] + lo[i] = f[i] to 2^-48
// relative.
inline void split_inv_freq(const std::vector<double>& f, std::vector<float>& hi, std::vector<float>& lo) {
  hi.resize(f.size());
  lo.resize(f.size());
  for (size_t i = 0; i < f.size(); ++i) {
    hi[i] = float(f[i]);
    lo[i] = float(f[i] - double(hi[i]));  // f - hi is exact in double
  }
}

}  // namespace seam
