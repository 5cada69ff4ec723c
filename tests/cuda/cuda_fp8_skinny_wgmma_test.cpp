// The skinny FP8 wgmma GEMM (fp8_gemm_skinny_wgmma.h: 5..64 rows, swap-AB, split K) against the
// CPU definition of linear_fp8 (backend.h "FP8 linear"; the CPU backend runs it) at rows 5, 8, 13,
// 16, 33, 64 (each n bucket 8 / 16 / 32 / 64, full and partial), every weight scheme (per-channel x
// per-token, per-tensor x static input scale, block128 x 1x128 groups), f32 / bf16 / f16 out, bias,
// accumulate, a strided out; both ring variants (one or two blocks an SM) and forced split counts,
// the four Llama-3.1-8B projections and a K split 112 ways; 128- and 256-feature tiles; split-K determinism (two
// launches bit for bit, tickets left zero); graph capture with new inputs on replay; the route through
// CudaBackend::linear_fp8 (SEAM_FP8_SKINNY) at 5..64 rows; the split rule.
//
// Bounds (cuda_fp8_gemm_wgmma_test.cpp's, whose header says why):
//  * exact values (E4M3 codes in {0, +-1, +-2}, power-of-two scales): bit-exact in any order of
//    the float32 sums, split or not. A wrong feature, token, K block, split, swizzle, scale or tail
//    shows as a mismatch, named with its tile and split.
//  * random values: |error| <= 2^-9 of the magnitude sum_g xs ws sum_k |xq wq| (+ one output ulp
//    for f16 / bf16, four float32 roundings for f32): Hopper's FP8 MMA keeps ~13 bits inside a K
//    block; a float32-exact bound is not what FP8 tensor cores compute.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <tuple>

#include "backend/cpu/fp8_cpu.h"
#include "backend/cuda/fp8_cublaslt.h"
#include "backend/cuda/fp8_gemm_skinny_wgmma.h"
#include "backend/cuda/fp8_gemm_wgmma.h"
#include "backend/cuda/fp8_gemv.h"
#include "backend/cuda/fp8_quantize.h"
#include "core/error.h"
#include "core/fp8.h"
#include "cuda_test_util.h"

namespace seam::test {
namespace {

enum class Values { exact, random };

struct SkCase {
  Fp8WeightScheme w;
  Fp8ActScheme act;
  int64_t m, n_out, n_in;
  DType t;
  bool bias = false, accumulate = false, strided = false;
};

std::string describe(const SkCase& c, Values v) {
  return std::string(v == Values::exact ? "exact" : "random") + " " + short_name(c.t) + " " +
         fp8_weight_scheme_name(c.w) + "/" + fp8_act_scheme_name(c.act) + " M " + std::to_string(c.m) + " N " +
         std::to_string(c.n_out) + " K " + std::to_string(c.n_in) + (c.bias ? " bias" : "") +
         (c.accumulate ? " accumulate" : "") + (c.strided ? " strided out" : "");
}

// Bulk random bits (splitmix64): gate_up's weight is 117 M codes.
struct Bits {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float uniform() { return float(next() >> 40) * 0x1p-24f; }  // [0, 1)
};

constexpr uint8_t kExactCodes[5] = {0x00, 0x38, 0xb8, 0x40, 0xc0};  // 0, 1, -1, 2, -2
constexpr size_t kWorkspaceBytes = size_t(32) << 20;

const std::tuple<Fp8WeightScheme, Fp8ActScheme> kSchemes[] = {
    {Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token},
    {Fp8WeightScheme::per_tensor, Fp8ActScheme::static_per_tensor},
    {Fp8WeightScheme::block128, Fp8ActScheme::dynamic_group128}};

class CudaFp8SkinnyWgmma : public CudaTest {
 protected:
  void SetUp() override {
    CudaTest::SetUp();
    if (IsSkipped()) return;
    void* p = gpu->alloc(16 * 128);
    owned_.push_back(p);
    Fp8Weight probe;
    probe.w = Tensor(p, DType::fp8_e4m3, Device::cuda, {8, 128});
    if (!cuda::fp8_gemm_skinny_wgmma_applies(Tensor(p, DType::bf16, Device::cuda, {8, 8}),
                                             Tensor(p, DType::fp8_e4m3, Device::cuda, {8, 128}), probe))
      GTEST_SKIP() << "the skinny FP8 wgmma GEMM needs an sm_90a build, a compute capability 9.0 GPU and the "
                      "driver's TMA encoder";
    workspace_ = gpu->alloc(kWorkspaceBytes);
    owned_.push_back(workspace_);
    ASSERT_EQ(cudaMemset(workspace_, 0, kWorkspaceBytes), cudaSuccess);  // the tickets start at zero
  }
  void TearDown() override {
    if (gpu) {
      gpu->synchronize();
      for (void* p : owned_) gpu->release(p);
    }
    CudaTest::TearDown();
  }

  // A weight on the host (the reference's) and the device, made once per (scheme, N, K, values).
  struct Weight {
    std::vector<uint8_t> codes;  // [N, K]
    std::vector<float> scales;   // [1] | [N] | [N, K / 128]
    float input_scale = 0.f;
    Fp8Weight gpu;
  };
  const Weight& weight(Fp8WeightScheme s, Fp8ActScheme act, int64_t n_out, int64_t n_in, Values v) {
    const auto key = std::make_tuple(int(s), int(act), n_out, n_in, int(v));
    auto it = weights_.find(key);
    if (it != weights_.end()) return it->second;
    Weight& W = weights_[key];
    Bits bits{uint64_t(n_out * 131 + n_in * 7 + int(s) * 3 + int(v))};
    W.codes.resize(size_t(n_out * n_in));
    for (auto& b : W.codes) {
      if (v == Values::exact) {
        b = kExactCodes[bits.next() % 5];
      } else {
        do b = uint8_t(bits.next());
        while ((b & 0x7f) == 0x7f);  // any finite code
      }
    }
    const int64_t n_kb = n_in / 128;
    const int64_t n_s = s == Fp8WeightScheme::per_tensor ? 1 : s == Fp8WeightScheme::per_channel ? n_out : n_out * n_kb;
    W.scales.resize(size_t(n_s));
    for (auto& x : W.scales)
      x = v == Values::exact ? std::ldexp(1.f, -int(bits.next() % 3)) : 0.001f + 0.019f * bits.uniform();
    W.input_scale = v == Values::exact ? 0.25f : 0.02f;
    void* wd = gpu->alloc(W.codes.size());
    owned_.push_back(wd);
    gpu->copy_h2d(wd, W.codes.data(), W.codes.size());
    W.gpu.w = Tensor(wd, DType::fp8_e4m3, Device::cuda, {n_out, n_in});
    W.gpu.w_scale = s == Fp8WeightScheme::block128 ? upload(W.scales, DType::f32, {n_out, n_kb})
                                                   : upload(W.scales, DType::f32, {n_s});
    W.gpu.w_scheme = s;
    W.gpu.act = act;
    if (act == Fp8ActScheme::static_per_tensor) W.gpu.input_scale = upload({W.input_scale}, DType::f32, {1});
    gpu->synchronize();
    return W;
  }
  // The reference's view of W over outputs [c0, c0 + cn).
  static Fp8Weight cpu_weight(const Weight& W, int64_t c0, int64_t cn, float& input_scale) {
    const Fp8Weight& g = W.gpu;
    Fp8Weight f;
    const int64_t n_in = g.w.size(1), n_kb = n_in / 128;
    f.w_scheme = g.w_scheme;
    f.act = g.act;
    f.w = Tensor(const_cast<uint8_t*>(W.codes.data()) + c0 * n_in, DType::fp8_e4m3, Device::cpu, {cn, n_in});
    float* s = const_cast<float*>(W.scales.data());
    f.w_scale = g.w_scheme == Fp8WeightScheme::per_tensor ? Tensor(s, DType::f32, Device::cpu, {1})
                : g.w_scheme == Fp8WeightScheme::per_channel
                    ? Tensor(s + c0, DType::f32, Device::cpu, {cn})
                    : Tensor(s + c0 * n_kb, DType::f32, Device::cpu, {cn, n_kb});
    input_scale = W.input_scale;
    if (g.act == Fp8ActScheme::static_per_tensor) f.input_scale = Tensor(&input_scale, DType::f32, Device::cpu, {1});
    return f;
  }
  // x [m, K]: exact: small integers times a power of two per row with 448 times it once per scale
  // group (a dynamic scale is then that power of two); random: uniform [-4, 4) with an outlier.
  // Row 1 is all zero.
  static std::vector<float> make_x(int64_t m, int64_t n_in, Fp8ActScheme act, float input_scale, DType t, Values v,
                                   uint64_t seed = 0) {
    Bits bits{uint64_t(m * 1000003 + n_in * 17 + int(act) + 100 * int(v)) + seed};
    std::vector<float> x(size_t(m * n_in));
    const int64_t group = act == Fp8ActScheme::dynamic_group128 ? 128 : n_in;
    for (int64_t i = 0; i < m; ++i) {
      float* row = x.data() + i * n_in;
      if (v == Values::exact) {
        const float s =
            act == Fp8ActScheme::static_per_tensor ? input_scale : std::ldexp(1.f, int(bits.next() % 3) - 1);
        for (int64_t k = 0; k < n_in; ++k) row[k] = s * float(int(bits.next() % 5) - 2);
        if (act != Fp8ActScheme::static_per_tensor)
          for (int64_t g0 = 0; g0 < n_in; g0 += group) row[g0 + int64_t(bits.next() % uint64_t(group))] = 448.f * s;
      } else {
        for (int64_t k = 0; k < n_in; ++k) row[k] = 8.f * bits.uniform() - 4.f;
        if (i == 2) row[n_in / 2] = 900.f;  // past a static scale's range: saturates
      }
      if (i == 1) std::fill(row, row + n_in, 0.f);
    }
    return round_to(x, t);
  }
  // Output windows: all of a narrow N, else 136 at each end and around the middle (tail tiles, tile
  // and warpgroup edges).
  static std::vector<std::pair<int64_t, int64_t>> check_cols(int64_t n_out) {
    if (n_out <= 3 * 136) return {{0, n_out}};
    const int64_t mid = n_out / 2 / 8 * 8 - 64;
    return {{0, 136}, {mid, 136}, {n_out - 136, 136}};
  }

  // One case's operands on the device: x quantized by launch_fp8_quantize_act into codes / scales.
  struct Run {
    std::vector<float> x, bias, out0;
    int64_t ld = 0, n_groups = 1;
    Tensor codes, scales, bd, xd;
  };
  Run prepare(const SkCase& c, Values v, const Weight& W, uint64_t seed = 0) {
    Run r;
    r.x = make_x(c.m, c.n_in, c.act, W.input_scale, c.t, v, seed);
    Bits bits{uint64_t(c.m + c.n_out + c.n_in) + seed};
    r.bias.resize(size_t(c.n_out));
    for (auto& b : r.bias) b = v == Values::exact ? float(int(bits.next() % 9) - 4) * 0.5f : 4.f * bits.uniform() - 2.f;
    r.bias = round_to(r.bias, c.t);
    r.ld = c.strided ? c.n_out + 9 : c.n_out;  // odd: the epilogue's unpaired stores
    r.out0.resize(size_t(c.m * r.ld));
    for (auto& o : r.out0) o = v == Values::exact ? float(int(bits.next() % 9) - 4) : 4.f * bits.uniform() - 2.f;
    r.out0 = round_to(r.out0, c.t);
    r.xd = upload(r.x, c.t, {c.m, c.n_in});
    r.n_groups = c.act == Fp8ActScheme::dynamic_group128 ? c.n_in / 128 : 1;
    r.codes = empty(DType::f32, {(c.m * c.n_in + 3) / 4});  // storage for the codes
    r.codes = Tensor(r.codes.data, DType::fp8_e4m3, Device::cuda, {c.m, c.n_in});
    r.scales = empty(DType::f32, {r.n_groups, c.m});
    r.bd = c.bias ? upload(r.bias, c.t, {c.n_out}) : Tensor();
    cuda::launch_fp8_quantize_act(r.codes, r.scales, r.xd, W.gpu, stream());
    return r;
  }
  // The kernel on r into a fresh out ([m, ld]: out0 for accumulate and a strided out's padding,
  // else NaN, so an element never written stays NaN); the whole buffer back.
  std::vector<float> launch(const SkCase& c, const Weight& W, const Run& r, int bps, int splits, int features = 0) {
    const Tensor base = c.accumulate || c.strided ? upload(r.out0, c.t, {c.m, r.ld}) : empty(c.t, {c.m, r.ld});
    const Tensor out = base.slice_cols(0, c.n_out);
    EXPECT_TRUE(cuda::fp8_gemm_skinny_wgmma_applies(out, r.codes, W.gpu));
    const cuda::Fp8SkinnyPlan plan = cuda::fp8_gemm_skinny_wgmma_plan_for(r.codes, W.gpu, bps, splits, features);
    EXPECT_LE(cuda::fp8_gemm_skinny_wgmma_workspace_bytes(plan), kWorkspaceBytes);
    cuda::launch_fp8_gemm_skinny_wgmma(out, r.codes, r.scales, W.gpu, r.bd, c.accumulate, stream(), workspace_,
                                       kWorkspaceBytes, bps, splits, features);
    return download(base);
  }

  // got ([m, ld]) against the CPU reference on every row and check_cols; returns the worst error /
  // magnitude (random values).
  double check(const SkCase& c, Values v, const Weight& W, const Run& r, const std::vector<float>& got,
               const cuda::Fp8SkinnyPlan& plan) {
    SCOPED_TRACE(describe(c, v) + ", n " + std::to_string(plan.n) + ", " + std::to_string(plan.features) +
                 "-feature tiles, " + std::to_string(plan.splits) + " splits, " + std::to_string(plan.blocks_per_sm) +
                 " block(s) an SM");
    if (c.strided)  // the padding is never written
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t o = c.n_out; o < r.ld; ++o)
          if (got[size_t(i * r.ld + o)] != r.out0[size_t(i * r.ld + o)]) {
            ADD_FAILURE() << "padding element (" << i << ", " << o << ") was written";
            i = c.m;
            break;
          }
    // The quantized rows (fp8_cpu::quantize_row, bit-exact with the GPU's) for the magnitude.
    std::vector<uint8_t> xq(size_t(c.m * c.n_in));
    std::vector<float> xs(size_t(c.m * r.n_groups));
    float in_scale = 0.f;
    const Fp8Weight full = cpu_weight(W, 0, c.n_out, in_scale);
    for (int64_t i = 0; i < c.m; ++i)
      fp8_cpu::quantize_row(r.x.data() + i * c.n_in, c.n_in, full, xq.data() + i * c.n_in, xs.data() + i * r.n_groups);
    float abs_lut[256];
    for (int b = 0; b < 256; ++b) abs_lut[b] = std::fabs(fp8_e4m3_to_f32(uint8_t(b)));
    const int64_t width = c.w == Fp8WeightScheme::block128 ? 128 : c.n_in;
    double worst = 0;
    int64_t n_bad = 0;
    for (const auto& [c0, cn] : check_cols(c.n_out)) {
      float in_s = 0.f;
      const Fp8Weight wc = cpu_weight(W, c0, cn, in_s);
      std::vector<float> ref(size_t(c.m * cn)), bc(r.bias.begin() + c0, r.bias.begin() + c0 + cn), xc = r.x;
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t o = 0; o < cn; ++o) ref[size_t(i * cn + o)] = r.out0[size_t(i * r.ld + c0 + o)];
      cpu.linear_fp8(host_view(ref, {c.m, cn}), host_view(xc, {c.m, c.n_in}), wc,
                     c.bias ? host_view(bc, {cn}) : Tensor(), c.accumulate);
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t o = 0; o < cn; ++o) {
          const int64_t col = c0 + o;
          const float g = got[size_t(i * r.ld + col)], want = ref[size_t(i * cn + o)];
          bool ok;
          if (v == Values::exact) {
            ok = g == round_to({want}, c.t)[0];
          } else {
            double mag = 0;
            const uint8_t* a = xq.data() + i * c.n_in;
            const uint8_t* w = W.codes.data() + col * c.n_in;
            for (int64_t g0 = 0; g0 < c.n_in; g0 += width) {
              double s = 0;
              for (int64_t k = g0; k < g0 + width; ++k) s += double(abs_lut[a[k]]) * double(abs_lut[w[k]]);
              const int64_t gi = g0 / 128;
              const double ws = c.w == Fp8WeightScheme::per_tensor    ? W.scales[0]
                                : c.w == Fp8WeightScheme::per_channel ? W.scales[size_t(col)]
                                                                      : W.scales[size_t(col * (c.n_in / 128) + gi)];
              mag += double(xs[size_t(i * r.n_groups + (r.n_groups > 1 ? gi : 0))]) * ws * s;
            }
            const double others = (c.bias ? std::fabs(bc[size_t(o)]) : 0.) +
                                  (c.accumulate ? std::fabs(r.out0[size_t(i * r.ld + col)]) : 0.);
            const double ulp =
                c.t == DType::f32
                    ? 4 * 0x1p-24 * (mag + others)
                    : std::ldexp(1.0, std::ilogb(std::max(std::fabs(want), 1e-30f)) - (c.t == DType::f16 ? 10 : 7));
            const double err = std::fabs(double(g) - double(want));
            ok = std::isfinite(g) && err <= 0x1p-9 * mag + ulp;
            if (mag > 0) worst = std::max(worst, std::max(0.0, err - (c.t == DType::f32 ? 0.0 : ulp)) / mag);
          }
          if (!ok && n_bad++ < 5) {
            ADD_FAILURE() << "out(" << i << ", " << col << ") = " << g << ", want " << want << " (tile "
                          << col / plan.features << ", feature " << col % plan.features << " of it, token " << i
                          << " of the n " << plan.n << " bucket)";
          }
        }
    }
    if (n_bad > 5) ADD_FAILURE() << n_bad << " elements off in all";
    return worst;
  }

  // One case on each kernel variant (128-feature tiles on the one- and two-block rings, 256-feature
  // tiles; the rule's splits) and at each forced split count (both tile widths); returns the worst
  // error / magnitude.
  double run_case(const SkCase& c, Values v, std::initializer_list<int> forced_splits = {}) {
    const Weight& W = weight(c.w, c.act, c.n_out, c.n_in, v);
    const Run r = prepare(c, v, W);
    double worst = 0;
    auto one = [&](int bps, int splits, int features) {
      const std::vector<float> got = launch(c, W, r, bps, splits, features);
      const cuda::Fp8SkinnyPlan plan = cuda::fp8_gemm_skinny_wgmma_plan_for(r.codes, W.gpu, bps, splits, features);
      worst = std::max(worst, check(c, v, W, r, got, plan));
    };
    one(1, 0, 128);
    one(2, 0, 128);
    one(1, 0, 256);
    for (int s : forced_splits) {
      one(1, s, 128);
      one(1, s, 256);
    }
    return worst;
  }

  // Every scheme x rows x N at this K; dtype and bias / accumulate / strided rotate over the cases.
  void sweep(int64_t n_in, Values v, std::initializer_list<int64_t> ms, std::initializer_list<int64_t> ns,
             std::initializer_list<int> forced_splits = {}) {
    double worst = 0;
    int k = 0;
    for (const auto& [ws, act] : kSchemes)
      for (int64_t n_out : ns)
        for (int64_t m : ms) {
          const DType t = k % 3 == 0 ? DType::bf16 : k % 3 == 1 ? DType::f32 : DType::f16;
          const int mode = (k++ / 3) % 4;  // every dtype sees every mode
          const SkCase c{ws, act, m, n_out, n_in, t, mode == 1 || mode == 3, mode >= 2, mode == 3};
          worst = std::max(worst, run_case(c, v, forced_splits));
        }
    if (v == Values::random)
      std::printf("K %lld random values: worst |error| / magnitude %.3g (bound 2^-9 = %.3g)\n", (long long)n_in, worst,
                  0x1p-9);
  }

  void* workspace_ = nullptr;
  std::vector<void*> owned_;
  std::map<std::tuple<int, int, int64_t, int64_t, int>, Weight> weights_;
};

TEST_F(CudaFp8SkinnyWgmma, ExactValuesK128) { sweep(128, Values::exact, {5, 8, 13, 16, 33, 64}, {128, 4104}); }
TEST_F(CudaFp8SkinnyWgmma, ExactValuesK640ForcedSplits) {
  sweep(640, Values::exact, {5, 8, 13, 16, 33, 64}, {136, 4104}, {2, 3, 5});
}
TEST_F(CudaFp8SkinnyWgmma, ExactValuesK4096) { sweep(4096, Values::exact, {5, 8, 13, 16, 33, 64}, {128, 6144}, {7}); }
TEST_F(CudaFp8SkinnyWgmma, ExactValuesK14336) { sweep(14336, Values::exact, {5, 33, 64}, {4096}); }
TEST_F(CudaFp8SkinnyWgmma, RandomValuesK4096) { sweep(4096, Values::random, {5, 13, 64}, {128, 4104}, {3}); }
TEST_F(CudaFp8SkinnyWgmma, RandomValuesK14336) { sweep(14336, Values::random, {8, 33}, {256}, {16}); }

// The four Llama-3.1-8B projections (qkv 6144 x 4096, o 4096 x 4096, gate_up 28672 x 4096, down
// 4096 x 14336) at 64 and 13 rows, per-channel and block128 weights, random and exact values.
TEST_F(CudaFp8SkinnyWgmma, Llama8BProjections) {
  const int64_t shapes[4][2] = {{6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336}};
  double worst = 0;
  for (const auto& s : shapes)
    for (int64_t m : {64, 13})
      for (Fp8WeightScheme ws : {Fp8WeightScheme::per_channel, Fp8WeightScheme::block128}) {
        const Fp8ActScheme act =
            ws == Fp8WeightScheme::block128 ? Fp8ActScheme::dynamic_group128 : Fp8ActScheme::dynamic_per_token;
        const SkCase c{ws, act, m, s[0], s[1], m == 64 ? DType::bf16 : DType::f32, m == 64, false};
        worst = std::max(worst, run_case(c, Values::random));
        if (m == 64) run_case(c, Values::exact);
      }
  std::printf("Llama-8B projections, random values: worst |error| / magnitude %.3g (bound %.3g)\n", worst, 0x1p-9);
}

// A K of 112 blocks over one tile: the rule's split and forced ones up to one K block a split
// (uneven splits included), exact values bit for bit.
TEST_F(CudaFp8SkinnyWgmma, ManySplitsOfALongK) {
  for (const auto& [ws, act] : kSchemes) {
    const SkCase c{ws, act, 33, 128, 14336, DType::f32, true, true};
    run_case(c, Values::exact, {2, 9, 37, 111, 112});
  }
  const cuda::Fp8SkinnyPlan p = cuda::fp8_gemm_skinny_wgmma_plan(33, 128, 14336, 132, 1, 0);
  EXPECT_GT(p.splits, 1) << "one tile of 112 K blocks must split";
}

// Split K is deterministic (the last block adds the partials in split order): launches of the same
// product are bit-equal, at the rule's split and at forced ones; each launch leaves every ticket at
// zero (a ticket left over would make no block the last: the next launch's out stays NaN).
TEST_F(CudaFp8SkinnyWgmma, SplitKIsDeterministicAndLeavesTicketsZero) {
  const SkCase c{Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 64, 6144, 4096, DType::f32};
  const Weight& W = weight(c.w, c.act, c.n_out, c.n_in, Values::random);
  const Run r = prepare(c, Values::random, W);
  ASSERT_GT(cuda::fp8_gemm_skinny_wgmma_plan_for(r.codes, W.gpu, 1, 0).splits, 1) << "qkv at 64 rows splits K";
  for (int splits : {0, 5, 16}) {  // 16 splits of 48 tiles: 25 MB of the fixture's 32 MB workspace
    SCOPED_TRACE("splits " + std::to_string(splits));
    const std::vector<float> a = launch(c, W, r, 1, splits), b = launch(c, W, r, 1, splits);
    EXPECT_EQ(a, b) << "two launches of one split product differ";
    EXPECT_TRUE(std::all_of(a.begin(), a.end(), [](float x) { return std::isfinite(x); }));
  }
  std::vector<uint32_t> tickets(cuda::kFp8SkinnyTickets);
  gpu->synchronize();
  ASSERT_EQ(cudaMemcpy(tickets.data(), workspace_, tickets.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_TRUE(std::all_of(tickets.begin(), tickets.end(), [](uint32_t t) { return t == 0; }))
      << "a launch left a ticket non-zero";
}

// Through a backend with SEAM_FP8_SKINNY=on at rows 5..64: linear_fp8 equals the kernel launched
// alone on the same codes, bit for bit (the route is this kernel); SEAM_FP8_SKINNY=off restores
// the old routes (cuBLASLt's for per-channel weights, the one-block wgmma GEMM for the others,
// each equal to that route run alone); the default (auto) is the skinny route for 128-block
// weights and the old one for the rest; rows 4 (the GEMV) and 65 take the same route whatever the
// switch; a bad value is an error naming the variable.
TEST_F(CudaFp8SkinnyWgmma, RoutesLinearFp8FiveToSixtyFourRows) {
  setenv("SEAM_FP8_SKINNY", "off", 1);
  std::unique_ptr<Backend> off = make_cuda_backend(0);
  setenv("SEAM_FP8_SKINNY", "on", 1);
  std::unique_ptr<Backend> on = make_cuda_backend(0);
  setenv("SEAM_FP8_SKINNY", "sometimes", 1);
  EXPECT_THROW(
      {
        try {
          make_cuda_backend(0);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("SEAM_FP8_SKINNY"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
  unsetenv("SEAM_FP8_SKINNY");
  cuda::Fp8CublasLt lt;
  for (const auto& [ws, act] : kSchemes)
    for (int64_t m : {4, 5, 8, 13, 33, 64, 65}) {
      const SkCase c{ws, act, m, 4104, 4096, DType::f32, true, false};
      SCOPED_TRACE(describe(c, Values::random));
      const Weight& W = weight(c.w, c.act, c.n_out, c.n_in, Values::random);
      const Run r = prepare(c, Values::random, W);
      const Tensor routed = empty(c.t, {c.m, c.n_out}), routed_off = empty(c.t, {c.m, c.n_out});
      const Tensor routed_default = empty(c.t, {c.m, c.n_out});
      gpu->linear_fp8(routed_default, r.xd, W.gpu, r.bd, false);
      gpu->synchronize();
      on->linear_fp8(routed, r.xd, W.gpu, r.bd, false);
      on->synchronize();
      off->linear_fp8(routed_off, r.xd, W.gpu, r.bd, false);
      off->synchronize();
      const std::vector<float> got = download(routed), got_off = download(routed_off);
      const std::vector<float> got_default = download(routed_default);
      if (m <= cuda::kFp8GemvMaxRows || m > cuda::kFp8SkinnyMaxRows) {
        EXPECT_EQ(got, got_off) << "SEAM_FP8_SKINNY changed the route outside 5..64 rows";
        EXPECT_EQ(got_default, got_off) << "SEAM_FP8_SKINNY's default changed the route outside 5..64 rows";
        continue;
      }
      EXPECT_EQ(got, launch(c, W, r, 0, 0)) << "SEAM_FP8_SKINNY=on: linear_fp8 did not run the skinny GEMM";
      EXPECT_EQ(got_default, ws == Fp8WeightScheme::block128 ? got : got_off)
          << "SEAM_FP8_SKINNY's default: the skinny GEMM for 128-block weights only";
      const Tensor old_route = empty(c.t, {c.m, c.n_out});
      // cuBLASLt where it takes the product (per-channel weights, at the rows it has an algorithm
      // for), else the one-block wgmma GEMM (SEAM_FP8_GEMM=auto).
      if (ws != Fp8WeightScheme::per_channel ||
          !lt.run(old_route, r.codes, r.scales, W.gpu, r.bd, false, false, stream()))
        cuda::launch_fp8_gemm_wgmma(old_route, r.codes, r.scales, W.gpu, r.bd, false, stream());
      EXPECT_EQ(got_off, download(old_route)) << "SEAM_FP8_SKINNY=off: not the old route";
    }
}

// Captured through the backend (split and unsplit plans: qkv's and gate_up's shapes at 33 and 64
// rows) and replayed with new x in the same buffer: the replay equals an eager run on the new
// values bit for bit and differs from the first; the captured workspace's tickets stay usable.
TEST_F(CudaFp8SkinnyWgmma, ReplaysFromGraphWithNewInputs) {
  const SkCase cases[] = {
      {Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 64, 6144, 4096, DType::bf16, true, false},
      {Fp8WeightScheme::block128, Fp8ActScheme::dynamic_group128, 33, 4096, 14336, DType::f32, false, true},
      {Fp8WeightScheme::per_tensor, Fp8ActScheme::static_per_tensor, 13, 28672, 4096, DType::bf16, true, true}};
  for (const SkCase& c : cases) {
    SCOPED_TRACE(describe(c, Values::random));
    const Weight& W = weight(c.w, c.act, c.n_out, c.n_in, Values::random);
    const std::vector<float> x1 = make_x(c.m, c.n_in, c.act, W.input_scale, c.t, Values::random);
    std::vector<float> x2 = x1;
    for (auto& v : x2) v = 0.75f * v - 0.5f;
    x2 = round_to(x2, c.t);
    const std::vector<float> bias = round_to(random_normal(size_t(c.n_out), rng), c.t);
    const std::vector<float> out0 = round_to(random_normal(size_t(c.m * c.n_out), rng), c.t);
    const Tensor xd = upload(x1, c.t, {c.m, c.n_in}), x2d = upload(x2, c.t, {c.m, c.n_in});
    const Tensor bd = c.bias ? upload(bias, c.t, {c.n_out}) : Tensor();
    const Tensor eager1 = upload(out0, c.t, {c.m, c.n_out}), eager2 = upload(out0, c.t, {c.m, c.n_out});
    const Tensor replayed = upload(out0, c.t, {c.m, c.n_out});
    gpu->linear_fp8(eager1, xd, W.gpu, bd, c.accumulate);  // the warm-up: the workspace grows outside capture
    gpu->begin_capture();
    gpu->linear_fp8(replayed, xd, W.gpu, bd, c.accumulate);
    std::unique_ptr<Graph> g = gpu->end_capture();
    gpu->copy_d2d(xd.data, x2d.data, xd.nbytes());
    gpu->replay(*g);
    gpu->linear_fp8(eager2, xd, W.gpu, bd, c.accumulate);
    const std::vector<float> r = download(replayed), e1 = download(eager1), e2 = download(eager2);
    EXPECT_EQ(r, e2) << "the replay differs from an eager run on the new inputs";
    EXPECT_NE(r, e1) << "the replay did not read the new inputs";
    EXPECT_TRUE(std::all_of(r.begin(), r.end(), [](float v) { return std::isfinite(v); }));
    if (!c.accumulate) {  // again: the tickets the first replay used are zero again
      gpu->replay(*g);
      EXPECT_EQ(download(replayed), e2) << "a second replay differs";
    }
  }
}

// What it refuses: more than 64 rows, K not a multiple of 128, N not a multiple of 8; launching
// anyway, or with too little workspace for a split plan, is a clear error.
TEST_F(CudaFp8SkinnyWgmma, RefusesOtherShapes) {
  const Weight& ok = weight(Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 128, 256, Values::exact);
  const Tensor storage = empty(DType::f32, {65 * 64});
  const Tensor c64(storage.data, DType::fp8_e4m3, Device::cuda, {64, 256});
  const Tensor c65(storage.data, DType::fp8_e4m3, Device::cuda, {65, 256});
  EXPECT_TRUE(cuda::fp8_gemm_skinny_wgmma_applies(empty(DType::bf16, {64, 128}), c64, ok.gpu));
  EXPECT_FALSE(cuda::fp8_gemm_skinny_wgmma_applies(empty(DType::bf16, {65, 128}), c65, ok.gpu));
  Fp8Weight k200 = ok.gpu;
  k200.w = Tensor(ok.gpu.w.data, DType::fp8_e4m3, Device::cuda, {128, 200});
  EXPECT_FALSE(cuda::fp8_gemm_skinny_wgmma_applies(
      empty(DType::bf16, {8, 128}), Tensor(storage.data, DType::fp8_e4m3, Device::cuda, {8, 200}), k200));
  Fp8Weight n100 = ok.gpu;
  n100.w = Tensor(ok.gpu.w.data, DType::fp8_e4m3, Device::cuda, {100, 256});
  EXPECT_FALSE(cuda::fp8_gemm_skinny_wgmma_applies(empty(DType::bf16, {64, 100}), c64, n100));
  EXPECT_THROW(cuda::launch_fp8_gemm_skinny_wgmma(empty(DType::bf16, {65, 128}), c65, empty(DType::f32, {1, 65}),
                                                  ok.gpu, Tensor(), false, stream(), workspace_, kWorkspaceBytes),
               Error);
  EXPECT_THROW(cuda::launch_fp8_gemm_skinny_wgmma(empty(DType::bf16, {64, 128}), c64, empty(DType::f32, {1, 64}),
                                                  ok.gpu, Tensor(), false, stream(), nullptr, 0, 1, 2),
               Error);
}

// The split rule (host-side, no GPU needed): the decode projections fill the 132 SMs of an H200
// without a second wave; gate_up's tiles need no split; a forced count is clamped to K's blocks.
TEST(Fp8SkinnyPlan, FillsTheMultiprocessors) {
  using cuda::fp8_gemm_skinny_wgmma_plan;
  const cuda::Fp8SkinnyPlan qkv = fp8_gemm_skinny_wgmma_plan(64, 6144, 4096, 132, 1, 0);
  EXPECT_EQ(qkv.n, 64);
  EXPECT_EQ(qkv.tiles, 48);
  EXPECT_EQ(qkv.splits, 2);
  EXPECT_EQ(fp8_gemm_skinny_wgmma_plan(64, 4096, 4096, 132, 1, 0).splits, 4);  // o: 32 tiles
  // gate_up: 112 tiles of 256 features (x read from L2 once per 256), no split; 128 at 16 rows.
  const cuda::Fp8SkinnyPlan gate_up = fp8_gemm_skinny_wgmma_plan(64, 28672, 4096, 132, 1, 0);
  EXPECT_EQ(gate_up.features, 256);
  EXPECT_EQ(gate_up.tiles, 112);
  EXPECT_EQ(gate_up.splits, 1);
  EXPECT_EQ(fp8_gemm_skinny_wgmma_plan(16, 28672, 4096, 132, 1, 0).features, 128);
  EXPECT_EQ(fp8_gemm_skinny_wgmma_plan(64, 28672, 4096, 132, 2, 0).features, 128);  // the two-block ring
  EXPECT_EQ(qkv.features, 128);
  EXPECT_EQ(fp8_gemm_skinny_wgmma_plan(64, 4096, 14336, 132, 1, 0).splits, 4);  // down
  for (int64_t rows : {5, 8, 9, 16, 17, 32, 33, 64})
    EXPECT_EQ(fp8_gemm_skinny_wgmma_plan(rows, 4096, 4096, 132, 1, 0).n, rows <= 8    ? 8
                                                                         : rows <= 16 ? 16
                                                                         : rows <= 32 ? 32
                                                                                      : 64);
  for (int64_t n_out : {int64_t(4096), int64_t(6144), int64_t(28672)}) {
    const cuda::Fp8SkinnyPlan p = fp8_gemm_skinny_wgmma_plan(64, n_out, 4096, 132, 1, 0);
    EXPECT_TRUE(p.blocks() <= 132 || p.splits == 1) << n_out << ": " << p.blocks() << " blocks";
  }
  EXPECT_EQ(fp8_gemm_skinny_wgmma_plan(64, 128, 512, 132, 1, 9).splits, 4);  // 4 K blocks
  EXPECT_EQ(cuda::fp8_gemm_skinny_wgmma_workspace_bytes(qkv),
            size_t(cuda::kFp8SkinnyTickets) * 4 + size_t(96) * 128 * 64 * 4);
  EXPECT_EQ(cuda::fp8_gemm_skinny_wgmma_workspace_bytes(fp8_gemm_skinny_wgmma_plan(64, 28672, 4096, 132, 1, 0)), 0u);
}

}  // namespace
}  // namespace seam::test
