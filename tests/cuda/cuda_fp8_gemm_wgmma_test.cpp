// The FP8 wgmma GEMMs (fp8_gemm_wgmma.h, and its warp-specialised twin fp8_gemm_wgmma_ws.h at
// both its tile widths on every case too) against the CPU definition of linear_fp8 (backend.h "FP8 linear"; the CPU
// backend runs it), over M {5, 7, 16, 64, 65, 300, 1000} x N {128, 4104, 6144} x
// K {128, 4096, 14336}, bf16 and f32 out, per-channel x per-token, per-tensor x static and
// block128 x 1x128 groups, with bias, accumulate and a strided out; under graph capture with new
// inputs on replay; the routing (SEAM_FP8_GEMM) and what the kernel refuses.
//
// Two kinds of values, two bounds:
//  * exact: E4M3 codes in {0, +-1, +-2} (x's amax element 448 per row / group so that its scale is
//    a power of two), power-of-two scales. Every product, every K block's sum and every scaled
//    sum is exactly representable, in the tensor cores' reduced-precision alignment too (partial
//    sums below 2^11, 13 bits kept below the leading addend), so the GPU must equal the
//    reference bit for bit: out of any rounding order. Any wrong row, column, K block, swizzle,
//    scale or tail shows as a mismatch; failures name the element and its place in the tile.
//  * random: random codes and x (outliers, saturation, an all-zero row). Hopper's FP8 MMA adds the
//    products of a k32 step and the running partial aligned to the largest of them, keeping ~13
//    bits below it (truncating: DeepSeek-V3's report, "14 bits"), so a K block's sum is off by a
//    few 2^-13 of its magnitude sum_k |xq wq|, not by float32 rounding. The bound is 2^-9 of the
//    magnitude mag(i, o) = sum_g xs ws sum_{k in g} |xq wq| (8 x 2^-13 of headroom over a
//    block's own truncation) plus, for bf16 out, one bf16 ulp of the output (its single rounding;
//    f32 out: four float32 roundings of the values summed). The worst ratio error / mag is printed.
//    A float32-exact accumulation (1e-5 of mag) is not what FP8 tensor cores compute; the exact
//    values above are where the bound is zero.
//    The warp-specialised kernel's fast accumulation (Fp8WsAccum::fast: the tensor cores sum the
//    whole K, no promotion) truncates at every k32 step relative to the running sum, which is at
//    most mag: its bound is the promoted one per K block, summed over the K / 128 blocks. Its
//    exact values must still be bit-exact (their running sums stay far below 2^13). cuBLASLt's
//    route (fp8_cublaslt.h, per-channel weights), promoted and fast, is held to the same bounds.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "backend/cpu/fp8_cpu.h"
#include "backend/cuda/fp8_cublaslt.h"
#include "backend/cuda/fp8_gemm_wgmma.h"
#include "backend/cuda/fp8_gemm_wgmma_ws.h"
#include "backend/cuda/fp8_quantize.h"
#include "core/error.h"
#include "core/fp8.h"
#include "cuda_test_util.h"

namespace seam::test {
namespace {

enum class Values { exact, random };

struct GemmCase {
  Fp8WeightScheme w;
  Fp8ActScheme act;
  int64_t m, n_out, n_in;
  DType t;
  bool bias = false, accumulate = false, strided = false;
};

std::string describe(const GemmCase& c, Values v) {
  return std::string(v == Values::exact ? "exact" : "random") + " " + short_name(c.t) + " " +
         fp8_weight_scheme_name(c.w) + "/" + fp8_act_scheme_name(c.act) + " M " + std::to_string(c.m) + " N " +
         std::to_string(c.n_out) + " K " + std::to_string(c.n_in) + (c.bias ? " bias" : "") +
         (c.accumulate ? " accumulate" : "") + (c.strided ? " strided out" : "");
}

// Bulk random bits (splitmix64): the weights reach 88 M codes.
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

class CudaFp8GemmWgmma : public CudaTest {
 protected:
  void SetUp() override {
    CudaTest::SetUp();
    if (IsSkipped()) return;
    void* p = gpu->alloc(16 * 128);
    owned_.push_back(p);
    Fp8Weight probe;
    probe.w = Tensor(p, DType::fp8_e4m3, Device::cuda, {8, 128});
    if (!cuda::fp8_gemm_wgmma_applies(Tensor(p, DType::bf16, Device::cuda, {8, 8}),
                                      Tensor(p, DType::fp8_e4m3, Device::cuda, {8, 128}), probe))
      GTEST_SKIP() << "the FP8 wgmma GEMM needs an sm_90a build and a compute capability 9.0 GPU";
    ASSERT_EQ(cudaDeviceGetAttribute(&n_sms_, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
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
  Fp8Weight cpu_weight(const Weight& W, const Fp8Weight& g, int64_t c0, int64_t cn, float& input_scale) {
    Fp8Weight f;
    const int64_t n_in = g.w.size(1), n_kb = n_in / 128;
    f.w_scheme = g.w_scheme;
    f.act = g.act;
    f.w = Tensor(const_cast<uint8_t*>(W.codes.data()) + c0 * n_in, DType::fp8_e4m3, Device::cpu, {cn, n_in});
    float* s = const_cast<float*>(W.scales.data());
    switch (g.w_scheme) {
      case Fp8WeightScheme::per_tensor:
        f.w_scale = Tensor(s, DType::f32, Device::cpu, {1});
        break;
      case Fp8WeightScheme::per_channel:
        f.w_scale = Tensor(s + c0, DType::f32, Device::cpu, {cn});
        break;
      case Fp8WeightScheme::block128:
        f.w_scale = Tensor(s + c0 * n_kb, DType::f32, Device::cpu, {cn, n_kb});
        break;
    }
    input_scale = W.input_scale;
    if (g.act == Fp8ActScheme::static_per_tensor) f.input_scale = Tensor(&input_scale, DType::f32, Device::cpu, {1});
    return f;
  }
  // x [m, K] in `t`'s values. exact: small integers times a power of two per row, with 448 times it
  // once per scale group (dynamic schemes: the scale is then that power of two); random: uniform
  // in [-4, 4) with an outlier. Row 1 is all zero (a dynamic scale of 1).
  std::vector<float> make_x(int64_t m, int64_t n_in, Fp8ActScheme act, float input_scale, DType t, Values v) {
    Bits bits{uint64_t(m * 1000003 + n_in * 17 + int(act) + 100 * int(v))};
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

  // Rows the reference computes: all of a short batch, else the edges of the 64- and 128-row
  // tiles, the middle and the last rows.
  static std::vector<int64_t> check_rows(int64_t m) {
    std::set<int64_t> r;
    if (m <= 20) {
      for (int64_t i = 0; i < m; ++i) r.insert(i);
    } else {
      for (int64_t i : {int64_t(0), int64_t(1), int64_t(2), int64_t(8), int64_t(15), int64_t(16), int64_t(63),
                        int64_t(64), int64_t(65), int64_t(127), int64_t(128), m / 2, m - 2, m - 1})
        if (i >= 0 && i < m) r.insert(i);
    }
    return {r.begin(), r.end()};
  }
  // Output windows [begin, n): the first and last 136 (a tail tile and its neighbours) and 136
  // around the middle; all of a narrow N.
  static std::vector<std::pair<int64_t, int64_t>> check_cols(int64_t n_out) {
    if (n_out <= 3 * 136) return {{0, n_out}};
    const int64_t mid = n_out / 2 / 8 * 8 - 64;
    return {{0, 136}, {mid, 136}, {n_out - 136, 136}};
  }

  // Runs one case through launch_fp8_gemm_wgmma and (with_ws) launch_fp8_gemm_wgmma_ws, each from
  // launch_fp8_quantize_act's codes into its own out, and checks both against the CPU's linear_fp8
  // on check_rows x check_cols with the same bounds. Returns the worst error / mag of the two.
  double run_case(const GemmCase& c, Values v, int overlap = -1, bool with_ws = true) {
    SCOPED_TRACE(describe(c, v) + (overlap == 0 ? " serial main loop" : overlap == 1 ? " overlapped main loop" : ""));
    const cuda::Fp8WgmmaTile one_block_tile = cuda::fp8_gemm_wgmma_tile(c.m, c.n_out, n_sms_);
    const Weight& W = weight(c.w, c.act, c.n_out, c.n_in, v);
    const std::vector<float> x = make_x(c.m, c.n_in, c.act, W.input_scale, c.t, v);
    Bits bits{uint64_t(c.m + c.n_out + c.n_in)};
    std::vector<float> bias(size_t(c.n_out));
    for (auto& b : bias) b = v == Values::exact ? float(int(bits.next() % 9) - 4) * 0.5f : 4.f * bits.uniform() - 2.f;
    bias = round_to(bias, c.t);
    // A strided out has an odd row stride: the epilogue's unpaired stores (aligned pairs elsewhere).
    const int64_t ld = c.strided ? c.n_out + 9 : c.n_out;
    std::vector<float> out0(size_t(c.m * ld));
    for (auto& o : out0) o = v == Values::exact ? float(int(bits.next() % 9) - 4) : 4.f * bits.uniform() - 2.f;
    out0 = round_to(out0, c.t);

    const Tensor xd = upload(x, c.t, {c.m, c.n_in});
    const int64_t n_groups = c.act == Fp8ActScheme::dynamic_group128 ? c.n_in / 128 : 1;
    void* cd = gpu->alloc(size_t(c.m * c.n_in));
    const Tensor codes(cd, DType::fp8_e4m3, Device::cuda, {c.m, c.n_in});
    const Tensor scales = empty(DType::f32, {n_groups, c.m});
    // out: out0 everywhere for accumulate (and in a strided out's padding), else poisoned (NaN):
    // an element the kernel fails to write stays NaN.
    const Tensor base = c.accumulate || c.strided ? upload(out0, c.t, {c.m, ld}) : empty(c.t, {c.m, ld});
    const Tensor out = base.slice_cols(0, c.n_out);
    const Tensor bd = c.bias ? upload(bias, c.t, {c.n_out}) : Tensor();
    EXPECT_TRUE(cuda::fp8_gemm_wgmma_applies(out, codes, W.gpu));
    cuda::launch_fp8_quantize_act(codes, scales, xd, W.gpu, stream());
    cuda::launch_fp8_gemm_wgmma(out, codes, scales, W.gpu, bd, c.accumulate, stream(), overlap);
    struct Result {
      const char* kernel;
      cuda::Fp8WgmmaTile tile;
      std::vector<float> got;
      double bound_blocks;  // the random bound's multiple of 2^-9 mag: 1, or K / 128 (fast)
      bool fast;
    };
    std::vector<Result> results;
    results.push_back({"one-block kernel", one_block_tile, download(base), 1.0, false});
    // The warp-specialised kernel at both tile widths, promoted and (not block128) fast.
    std::vector<cuda::Fp8WsAccum> accums = {cuda::Fp8WsAccum::promoted};
    if (c.w != Fp8WeightScheme::block128) accums.push_back(cuda::Fp8WsAccum::fast);
    // 128 x 256 tiles also in clusters of 2 (the weight multicast): the same results bit for bit
    // is not asserted between the forms, each is held to the reference's bounds.
    static const char* const kNames[2][2] = {{"warp-specialised kernel", "warp-specialised kernel, cluster 2"},
                                             {"warp-specialised kernel, fast accumulation",
                                              "warp-specialised kernel, fast accumulation, cluster 2"}};
    if (with_ws)
      for (cuda::Fp8WsAccum accum : accums)
        for (int cols : {128, 256})
          for (int cluster : {1, 2}) {
            if (cluster == 2 && cols != 256) continue;
            const Tensor base_ws = c.accumulate || c.strided ? upload(out0, c.t, {c.m, ld}) : empty(c.t, {c.m, ld});
            const Tensor out_ws = base_ws.slice_cols(0, c.n_out);
            EXPECT_TRUE(cuda::fp8_gemm_wgmma_ws_applies(out_ws, codes, W.gpu));
            cuda::launch_fp8_gemm_wgmma_ws(out_ws, codes, scales, W.gpu, bd, c.accumulate, stream(), cols, accum,
                                           cluster);
            const bool fast = accum == cuda::Fp8WsAccum::fast;
            results.push_back({kNames[fast][cluster - 1], {cuda::kFp8WsTileRows, cols}, download(base_ws),
                               fast ? double(c.n_in / 128) : 1.0, fast});
          }
    // cuBLASLt's route (the default for per-channel weights past the GEMV, SEAM_FP8_GEMM=ws-lt)
    // where it takes the product (per-channel, an aligned out, rows it has an algorithm for),
    // promoted and fast: both held to the fast bound (cuBLASLt does not document how often it
    // promotes), both bit-exact on the exact values.
    if (with_ws && c.w == Fp8WeightScheme::per_channel)
      for (cuda::Fp8CublasLt* lt : {&lt_promoted_, &lt_fast_}) {
        const Tensor base_lt = c.accumulate || c.strided ? upload(out0, c.t, {c.m, ld}) : empty(c.t, {c.m, ld});
        if (!lt->run(base_lt.slice_cols(0, c.n_out), codes, scales, W.gpu, bd, c.accumulate, false, stream()))
          continue;
        results.push_back({lt->fast_accum() ? "cuBLASLt route, fast accumulation" : "cuBLASLt route, promoted",
                           {1, 1}, download(base_lt), double(c.n_in / 128), true});
      }
    gpu->release(cd);
    double worst = 0;
    for (const Result& res : results) {
      const double r = check_case(c, v, x, bias, out0, ld, W, n_groups, res.kernel, res.tile, res.got, res.bound_blocks);
      if (res.fast)
        worst_fast_ = std::max(worst_fast_, r);
      else
        worst = std::max(worst, r);
    }
    return worst;
  }

  // Checks one kernel's out (got: [m, ld] with its padding) against the CPU reference.
  double check_case(const GemmCase& c, Values v, const std::vector<float>& x, const std::vector<float>& bias,
                    const std::vector<float>& out0, int64_t ld, const Weight& W, int64_t n_groups, const char* kernel,
                    cuda::Fp8WgmmaTile tile, const std::vector<float>& got, double bound_blocks = 1.0) {
    SCOPED_TRACE(std::string(kernel) + ", tile " + std::to_string(tile.rows) + " x " + std::to_string(tile.cols));
    if (c.strided)  // the padding is never written
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t o = c.n_out; o < ld; ++o)
          if (got[size_t(i * ld + o)] != out0[size_t(i * ld + o)]) {
            ADD_FAILURE() << "padding element (" << i << ", " << o << ") was written";
            i = c.m;
            break;
          }

    const std::vector<int64_t> rows = check_rows(c.m);
    const int64_t nr = int64_t(rows.size());
    std::vector<float> xr(size_t(nr * c.n_in));
    for (int64_t i = 0; i < nr; ++i) std::copy_n(x.begin() + rows[size_t(i)] * c.n_in, c.n_in, xr.begin() + i * c.n_in);
    // The quantized rows (fp8_cpu::quantize_row, bit-exact with the GPU's) for the magnitude.
    std::vector<uint8_t> xq(size_t(nr * c.n_in));
    std::vector<float> xs(size_t(nr * n_groups));
    float in_scale = 0.f;
    const Fp8Weight full = cpu_weight(W, W.gpu, 0, c.n_out, in_scale);
    for (int64_t i = 0; i < nr; ++i)
      fp8_cpu::quantize_row(xr.data() + i * c.n_in, c.n_in, full, xq.data() + i * c.n_in, xs.data() + i * n_groups);
    float abs_lut[256];
    for (int b = 0; b < 256; ++b) abs_lut[b] = std::fabs(fp8_e4m3_to_f32(uint8_t(b)));

    double worst = 0;
    int64_t n_bad = 0;
    for (const auto& [c0, cn] : check_cols(c.n_out)) {
      float in_s = 0.f;
      const Fp8Weight wc = cpu_weight(W, W.gpu, c0, cn, in_s);
      std::vector<float> ref(size_t(nr * cn)), bc(bias.begin() + c0, bias.begin() + c0 + cn);
      for (int64_t i = 0; i < nr; ++i)
        for (int64_t o = 0; o < cn; ++o) ref[size_t(i * cn + o)] = out0[size_t(rows[size_t(i)] * ld + c0 + o)];
      std::vector<float> xc = xr;
      cpu.linear_fp8(host_view(ref, {nr, cn}), host_view(xc, {nr, c.n_in}), wc, c.bias ? host_view(bc, {cn}) : Tensor(),
                     c.accumulate);
      for (int64_t i = 0; i < nr; ++i)
        for (int64_t o = 0; o < cn; ++o) {
          const int64_t row = rows[size_t(i)], col = c0 + o;
          const float g = got[size_t(row * ld + col)], r = ref[size_t(i * cn + o)];
          bool ok;
          double ratio = 0;
          if (v == Values::exact) {
            ok = g == round_to({r}, c.t)[0];
          } else {
            double mag = 0;
            const uint8_t* a = xq.data() + i * c.n_in;
            const uint8_t* w = W.codes.data() + col * c.n_in;
            const int64_t width = n_in_group(c);
            for (int64_t g0 = 0; g0 < c.n_in; g0 += width) {
              double s = 0;
              for (int64_t k = g0; k < g0 + width; ++k) s += double(abs_lut[a[k]]) * double(abs_lut[w[k]]);
              const int64_t gi = g0 / 128;
              const double ws = c.w == Fp8WeightScheme::per_tensor    ? W.scales[0]
                                : c.w == Fp8WeightScheme::per_channel ? W.scales[size_t(col)]
                                                                      : W.scales[size_t(col * (c.n_in / 128) + gi)];
              const double x_s = n_groups > 1 ? xs[size_t(i * n_groups + gi)] : xs[size_t(i * n_groups)];
              mag += x_s * ws * s;
            }
            const double others = (c.bias ? std::fabs(bc[size_t(o)]) : 0.) +
                                  (c.accumulate ? std::fabs(out0[size_t(row * ld + col)]) : 0.);
            const double ulp = c.t == DType::f32 ? 4 * 0x1p-24 * (mag + others)
                                                 : std::ldexp(1.0, std::ilogb(std::max(std::fabs(r), 1e-30f)) - 7);
            const double err = std::fabs(double(g) - double(r));
            ok = std::isfinite(g) && err <= bound_blocks * 0x1p-9 * mag + ulp;
            if (mag > 0) ratio = std::max(0.0, err - (c.t == DType::f32 ? 0.0 : ulp)) / mag;
          }
          worst = std::max(worst, ratio);
          if (!ok && n_bad++ < 5)
            ADD_FAILURE() << "out(" << row << ", " << col << ") = " << g << ", want " << r << " (tile row "
                          << row % tile.rows << " of block row " << row / tile.rows << ", tile col " << col % tile.cols
                          << " of block col " << col / tile.cols << ")";
        }
    }
    if (n_bad > 5) ADD_FAILURE() << n_bad << " elements off in all";
    return worst;
  }
  static int64_t n_in_group(const GemmCase& c) { return c.w == Fp8WeightScheme::block128 ? 128 : c.n_in; }

  // Every (scheme, M, N) at this K and these values: bias / accumulate / strided rotate over
  // the cases so that each scheme and dtype sees each of them.
  void sweep(int64_t n_in, Values v, std::initializer_list<int64_t> ms,
             std::initializer_list<int64_t> ns = {128, 4104, 6144}, int overlap = -1) {
    const std::tuple<Fp8WeightScheme, Fp8ActScheme> schemes[] = {
        {Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token},
        {Fp8WeightScheme::per_tensor, Fp8ActScheme::static_per_tensor},
        {Fp8WeightScheme::block128, Fp8ActScheme::dynamic_group128}};
    double worst = 0;
    worst_fast_ = 0;
    int k = 0;
    for (const auto& [ws, act] : schemes)
      for (int64_t n_out : ns)
        for (int64_t m : ms)
          for (DType t : {DType::bf16, DType::f32}) {
            const int mode = (k++ / 2) % 4;  // both dtypes see every mode
            GemmCase c{ws, act, m, n_out, n_in, t, mode == 1 || mode == 3, mode >= 2, mode == 3};
            // The warp-specialised kernel has one main loop: it runs with the default and serial sweeps.
            worst = std::max(worst, run_case(c, v, overlap, overlap != 1));
          }
    if (v == Values::random)
      std::printf("K %lld random values: worst |error| / magnitude %.3g (bound 2^-9 = %.3g); fast accumulation %.3g "
                  "(bound %lld x 2^-9 = %.3g)\n",
                  (long long)n_in, worst, 0x1p-9, worst_fast_, (long long)(n_in / 128), double(n_in / 128) * 0x1p-9);
  }

  // One case of GatedProductEqualsProductThenGatedAct (K 384, random values): the gated product
  // against the plain product (alone) into [gate | up] followed by the backend's gated_act.
  void gated_case(Fp8WeightScheme ws, Fp8ActScheme act, int64_t inter, int64_t m, DType t, cuda::Fp8WsAccum accum,
                  Activation f, int cluster) {
    SCOPED_TRACE(std::string(fp8_weight_scheme_name(ws)) + " inter " + std::to_string(inter) + " m " +
                 std::to_string(m) + " " + short_name(t) + (accum == cuda::Fp8WsAccum::fast ? " fast" : "") + " " +
                 activation_name(f) + " cluster " + std::to_string(cluster));
    const int64_t n_in = 384;
    const Weight& W = weight(ws, act, 2 * inter, n_in, Values::random);
    const Tensor xd = upload(make_x(m, n_in, act, W.input_scale, t, Values::random), t, {m, n_in});
    const int64_t n_groups = act == Fp8ActScheme::dynamic_group128 ? n_in / 128 : 1;
    void* cd = gpu->alloc(size_t(m * n_in));
    owned_.push_back(cd);
    const Tensor codes(cd, DType::fp8_e4m3, Device::cuda, {m, n_in});
    const Tensor scales = empty(DType::f32, {n_groups, m});
    cuda::launch_fp8_quantize_act(codes, scales, xd, W.gpu, stream());
    const Tensor gate_up = empty(t, {m, 2 * inter}), want = empty(t, {m, inter}), got = empty(t, {m, inter});
    cuda::launch_fp8_gemm_wgmma_ws(gate_up, codes, scales, W.gpu, Tensor(), false, stream(), 256, accum, 1);
    gpu->gated_act(want, gate_up, f);
    ASSERT_TRUE(cuda::fp8_gemm_wgmma_ws_glu_applies(got, codes, W.gpu));
    cuda::launch_fp8_gemm_wgmma_ws_glu(got, codes, scales, W.gpu, f, stream(), accum, cluster);
    const std::vector<float> g = download(got), w = download(want);
    int64_t n_bad = 0;
    for (size_t e = 0; e < g.size(); ++e)
      if (!(g[e] == w[e] || (std::isnan(g[e]) && std::isnan(w[e]))) && n_bad++ < 5)
        ADD_FAILURE() << "act(" << int64_t(e) / inter << ", " << int64_t(e) % inter << ") = " << g[e] << ", want "
                      << w[e];
    EXPECT_EQ(n_bad, 0);
  }

  // Through a backend with SEAM_FP8_GEMM=mode, captured once and replayed with new x (below).
  void replays_from_graph(const char* mode);

  int n_sms_ = 0;
  cuda::Fp8CublasLt lt_promoted_{false}, lt_fast_{true};
  double worst_fast_ = 0;  // the worst error / mag of the fast accumulation's cases in a sweep
  std::vector<void*> owned_;
  std::map<std::tuple<int, int, int64_t, int64_t, int>, Weight> weights_;
};

TEST_F(CudaFp8GemmWgmma, ExactValuesK128) { sweep(128, Values::exact, {5, 7, 16, 64, 65, 300, 1000}); }
TEST_F(CudaFp8GemmWgmma, ExactValuesK4096) { sweep(4096, Values::exact, {5, 7, 16, 64, 65, 300, 1000}); }
TEST_F(CudaFp8GemmWgmma, ExactValuesK14336) { sweep(14336, Values::exact, {5, 7, 16, 64, 65, 300, 1000}); }
// The main loop's two forms (launch_fp8_gemm_wgmma's overlap) at odd and even counts of K blocks
// (the overlapped loop takes them in pairs): 2, 3, 5 and 32 blocks; the warp-specialised kernel
// (with the serial sweep) too, whose 128-wide per-channel / per-tensor loop also pairs blocks
// (peeled odd / even tails), at and past its 4- and 6-stage rings.
TEST_F(CudaFp8GemmWgmma, BothMainLoopsAtOddAndEvenBlockCounts) {
  for (int overlap : {0, 1})
    for (int64_t n_in : {256, 384, 640, 4096}) sweep(n_in, Values::exact, {5, 65, 300}, {128, 4104}, overlap);
}
TEST_F(CudaFp8GemmWgmma, RandomValuesK128) { sweep(128, Values::random, {7, 65, 1000}); }
TEST_F(CudaFp8GemmWgmma, RandomValuesK4096) { sweep(4096, Values::random, {7, 65, 1000}); }
TEST_F(CudaFp8GemmWgmma, RandomValuesK14336) { sweep(14336, Values::random, {7, 65, 1000}); }

// The gated product (launch_fp8_gemm_wgmma_ws_glu): act equals the plain product into [gate | up]
// followed by the backend's gated_act, bit for bit, at random values (rounding and all), for every
// scheme, both accumulations, both activations, f32 / bf16 / f16 out, a row count past one tile
// row and inter of 1 and 3 tiles (the gate box of the last tile ends where the up rows begin), alone
// and in clusters of 2 (65 rows: the second CTA's row tile is wholly past the rows; 300: 3 row
// tiles, the last pair half empty).
TEST_F(CudaFp8GemmWgmma, GatedProductEqualsProductThenGatedAct) {
  const std::tuple<Fp8WeightScheme, Fp8ActScheme> schemes[] = {
      {Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token},
      {Fp8WeightScheme::per_tensor, Fp8ActScheme::static_per_tensor},
      {Fp8WeightScheme::block128, Fp8ActScheme::dynamic_group128}};
  for (const auto& [ws, act] : schemes)
    for (int64_t inter : {128, 384})
      for (int64_t m : {65, 300})
        for (DType t : {DType::f32, DType::bf16, DType::f16})
          for (cuda::Fp8WsAccum accum : {cuda::Fp8WsAccum::fast, cuda::Fp8WsAccum::promoted})
            for (Activation f : {Activation::silu, Activation::gelu_tanh})
              for (int cluster : {1, 2}) gated_case(ws, act, inter, m, t, accum, f, cluster);
  // inter not a multiple of 128: not taken (a tile's gate box would read up rows).
  const int64_t n_in = 384;
  const Weight& W = weight(Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 2 * 200, n_in, Values::random);
  void* cd = gpu->alloc(size_t(300 * n_in));
  owned_.push_back(cd);
  EXPECT_FALSE(cuda::fp8_gemm_wgmma_ws_glu_applies(empty(DType::bf16, {300, 200}),
                                                   Tensor(cd, DType::fp8_e4m3, Device::cuda, {300, n_in}), W.gpu));
}

// Through a backend on this kernel (SEAM_FP8_GEMM=wgmma; the default routes only 128-block
// weights here), captured once and replayed with new x values in the same buffer: the replay
// equals an eager run on the new values bit for bit, and both equal the kernel launched directly
// (the route is this kernel).
TEST_F(CudaFp8GemmWgmma, ReplaysFromGraphWithNewInputs) { replays_from_graph("wgmma"); }
// The same through SEAM_FP8_GEMM=ws on the warp-specialised kernel (every case has more than
// kFp8WsMinRows rows): its tensor maps travel in the captured launch.
TEST_F(CudaFp8GemmWgmma, WarpSpecialisedReplaysFromGraphWithNewInputs) { replays_from_graph("ws"); }

void CudaFp8GemmWgmma::replays_from_graph(const char* mode) {
  const bool ws = std::string(mode) == "ws";
  setenv("SEAM_FP8_GEMM", mode, 1);
  std::unique_ptr<Backend> wg = make_cuda_backend(0);
  unsetenv("SEAM_FP8_GEMM");
  const auto wg_stream = static_cast<cudaStream_t>(cuda_backend_stream(*wg));
  const GemmCase cases[] = {
      {Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 300, 4104, 4096, DType::bf16, true, false},
      {Fp8WeightScheme::block128, Fp8ActScheme::dynamic_group128, 65, 6144, 4096, DType::f32, false, true},
      {Fp8WeightScheme::per_tensor, Fp8ActScheme::static_per_tensor, 1000, 128, 14336, DType::bf16, true, true}};
  for (const GemmCase& c : cases) {
    SCOPED_TRACE(describe(c, Values::random));
    const Weight& W = weight(c.w, c.act, c.n_out, c.n_in, Values::random);
    const std::vector<float> x1 = make_x(c.m, c.n_in, c.act, W.input_scale, c.t, Values::random);
    std::vector<float> x2 = x1;
    for (auto& v : x2) v = 0.75f * v - 0.5f;
    x2 = round_to(x2, c.t);
    std::vector<float> bias = round_to(random_normal(size_t(c.n_out), rng), c.t);
    std::vector<float> out0 = round_to(random_normal(size_t(c.m * c.n_out), rng), c.t);
    const Tensor xd = upload(x1, c.t, {c.m, c.n_in});
    const Tensor bd = c.bias ? upload(bias, c.t, {c.n_out}) : Tensor();
    const Tensor eager1 = upload(out0, c.t, {c.m, c.n_out}), eager2 = upload(out0, c.t, {c.m, c.n_out});
    const Tensor replayed = upload(out0, c.t, {c.m, c.n_out}), direct = upload(out0, c.t, {c.m, c.n_out});
    const Tensor x2d = upload(x2, c.t, {c.m, c.n_in});
    gpu->synchronize();  // the uploads (on the fixture's stream) are done before wg's stream reads them
    wg->linear_fp8(eager1, xd, W.gpu, bd, c.accumulate);  // the warm-up: scratch grows outside capture
    wg->begin_capture();
    wg->linear_fp8(replayed, xd, W.gpu, bd, c.accumulate);
    std::unique_ptr<Graph> g = wg->end_capture();
    wg->copy_d2d(xd.data, x2d.data, xd.nbytes());  // new values, same buffer, stream order
    wg->replay(*g);
    wg->linear_fp8(eager2, xd, W.gpu, bd, c.accumulate);
    const int64_t n_groups = c.act == Fp8ActScheme::dynamic_group128 ? c.n_in / 128 : 1;
    void* cd = gpu->alloc(size_t(c.m * c.n_in));
    owned_.push_back(cd);
    const Tensor codes(cd, DType::fp8_e4m3, Device::cuda, {c.m, c.n_in});
    const Tensor scales = empty(DType::f32, {n_groups, c.m});
    gpu->synchronize();  // scales' allocation (fixture stream) before wg's stream writes it
    cuda::launch_fp8_quantize_act(codes, scales, xd, W.gpu, wg_stream);
    if (ws) {
      ASSERT_GT(c.m, cuda::kFp8WsMinRows);
      cuda::launch_fp8_gemm_wgmma_ws(direct, codes, scales, W.gpu, bd, c.accumulate, wg_stream);
    } else {
      cuda::launch_fp8_gemm_wgmma(direct, codes, scales, W.gpu, bd, c.accumulate, wg_stream);
    }
    wg->synchronize();
    const std::vector<float> r = download(replayed), e1 = download(eager1), e2 = download(eager2);
    EXPECT_EQ(r, e2) << "the replay differs from an eager run on the new inputs";
    EXPECT_NE(r, e1) << "the replay did not read the new inputs";
    EXPECT_EQ(download(direct), e2) << "linear_fp8 did not run the " << (ws ? "warp-specialised " : "")
                                    << "wgmma GEMM";
  }
}

// SEAM_FP8_GEMM=auto and cublaslt keep a per-channel linear_fp8 of 80 rows (past the skinny
// GEMM's 5..64; the ws modes' routing: the next test) on
// cuBLASLt's route, wgmma on this kernel, each bit for bit equal to the route run alone from the
// same codes; under auto a 128-block weight (no cuBLASLt mode on Hopper) takes this kernel; any
// other value is an error naming the variable.
TEST_F(CudaFp8GemmWgmma, SwitchSelectsTheRoute) {
  struct Env {
    explicit Env(const char* v) { setenv("SEAM_FP8_GEMM", v, 1); }
    ~Env() { unsetenv("SEAM_FP8_GEMM"); }
  };
  std::unique_ptr<Backend> lt_backend, wgmma_backend, auto_backend;
  {
    Env e("cublaslt");
    lt_backend = make_cuda_backend(0);
  }
  {
    Env e("auto");
    auto_backend = make_cuda_backend(0);
  }
  {
    Env e("wgmma");
    wgmma_backend = make_cuda_backend(0);
  }
  {
    Env e("tensorcores");
    try {
      make_cuda_backend(0);
      ADD_FAILURE() << "SEAM_FP8_GEMM=tensorcores was accepted";
    } catch (const Error& err) {
      EXPECT_NE(std::string(err.what()).find("SEAM_FP8_GEMM"), std::string::npos) << err.what();
      EXPECT_NE(std::string(err.what()).find("cublaslt"), std::string::npos) << err.what();
    }
  }
  cuda::Fp8CublasLt lt;
  for (DType t : {DType::bf16, DType::f32}) {
    // 80 rows: past the skinny GEMM's 5..64 (SEAM_FP8_SKINNY), a multiple of cuBLASLt's 16.
    const GemmCase c{Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 80, 256, 1024, t};
    SCOPED_TRACE(describe(c, Values::random));
    const Weight& W = weight(c.w, c.act, c.n_out, c.n_in, Values::random);
    const Tensor xd = upload(make_x(c.m, c.n_in, c.act, W.input_scale, t, Values::random), t, {c.m, c.n_in});
    const Tensor by_default = empty(t, {c.m, c.n_out}), by_wgmma = empty(t, {c.m, c.n_out});
    const Tensor by_lt = empty(t, {c.m, c.n_out});
    const Tensor alone_wgmma = empty(t, {c.m, c.n_out}), alone_lt = empty(t, {c.m, c.n_out});
    gpu->synchronize();  // the uploads (fixture stream) before auto_backend's stream reads them
    auto_backend->linear_fp8(by_default, xd, W.gpu, Tensor(), false);
    auto_backend->synchronize();
    gpu->synchronize();
    wgmma_backend->linear_fp8(by_wgmma, xd, W.gpu, Tensor(), false);
    wgmma_backend->synchronize();
    lt_backend->linear_fp8(by_lt, xd, W.gpu, Tensor(), false);
    lt_backend->synchronize();
    void* cd = gpu->alloc(size_t(c.m * c.n_in));
    owned_.push_back(cd);
    const Tensor codes(cd, DType::fp8_e4m3, Device::cuda, {c.m, c.n_in});
    const Tensor scales = empty(DType::f32, {1, c.m});
    cuda::launch_fp8_quantize_act(codes, scales, xd, W.gpu, stream());
    cuda::launch_fp8_gemm_wgmma(alone_wgmma, codes, scales, W.gpu, Tensor(), false, stream());
    ASSERT_TRUE(lt.run(alone_lt, codes, scales, W.gpu, Tensor(), false, false, stream()));
    const std::vector<float> w_alone = download(alone_wgmma), lt_alone = download(alone_lt);
    EXPECT_EQ(download(by_default), lt_alone) << "SEAM_FP8_GEMM=auto: not cuBLASLt's route";
    EXPECT_EQ(download(by_wgmma), w_alone) << "SEAM_FP8_GEMM=wgmma: not the wgmma GEMM";
    EXPECT_EQ(download(by_lt), lt_alone) << "SEAM_FP8_GEMM=cublaslt: not cuBLASLt's route";
  }
  {  // 128-block weights: cuBLASLt has no mode for them on Hopper; the default takes this kernel
    const GemmCase c{Fp8WeightScheme::block128, Fp8ActScheme::dynamic_group128, 80, 256, 1024, DType::bf16};
    SCOPED_TRACE(describe(c, Values::random));
    const Weight& W = weight(c.w, c.act, c.n_out, c.n_in, Values::random);
    const Tensor xd = upload(make_x(c.m, c.n_in, c.act, W.input_scale, c.t, Values::random), c.t, {c.m, c.n_in});
    const Tensor by_default = empty(c.t, {c.m, c.n_out}), alone = empty(c.t, {c.m, c.n_out});
    gpu->synchronize();  // the uploads (fixture stream) before auto_backend's stream reads them
    auto_backend->linear_fp8(by_default, xd, W.gpu, Tensor(), false);
    auto_backend->synchronize();
    void* cd = gpu->alloc(size_t(c.m * c.n_in));
    owned_.push_back(cd);
    const Tensor codes(cd, DType::fp8_e4m3, Device::cuda, {c.m, c.n_in});
    const Tensor scales = empty(DType::f32, {c.n_in / 128, c.m});
    cuda::launch_fp8_quantize_act(codes, scales, xd, W.gpu, stream());
    cuda::launch_fp8_gemm_wgmma(alone, codes, scales, W.gpu, Tensor(), false, stream());
    EXPECT_EQ(download(by_default), download(alone)) << "SEAM_FP8_GEMM=auto, 128-block weights: not the wgmma GEMM";
  }
}

// Past kFp8WsMinRows the default (SEAM_FP8_GEMM unset: ws-lt) runs cuBLASLt's route for
// per-channel weights and the warp-specialised kernel for the others (128-block, per-tensor);
// SEAM_FP8_GEMM=ws the warp-specialised kernel on every scheme; SEAM_FP8_GEMM=auto keeps
// per-channel weights on cuBLASLt's route. Each bit for bit equal to its route launched alone on
// the same codes (cuBLASLt with the backends' accumulation, SEAM_FP8_ACCUM's).
TEST_F(CudaFp8GemmWgmma, DefaultRoutesPastDecodeBatches) {
  setenv("SEAM_FP8_GEMM", "auto", 1);
  std::unique_ptr<Backend> auto_backend = make_cuda_backend(0);
  setenv("SEAM_FP8_GEMM", "ws", 1);
  std::unique_ptr<Backend> ws_backend = make_cuda_backend(0);
  unsetenv("SEAM_FP8_GEMM");
  cuda::Fp8CublasLt lt;
  const GemmCase cases[] = {
      {Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 200, 1024, 384, DType::bf16},
      {Fp8WeightScheme::block128, Fp8ActScheme::dynamic_group128, 130, 1024, 256, DType::f32},
      {Fp8WeightScheme::per_tensor, Fp8ActScheme::static_per_tensor, 65, 512, 128, DType::bf16}};
  for (const GemmCase& c : cases) {
    SCOPED_TRACE(describe(c, Values::random));
    ASSERT_GT(c.m, cuda::kFp8WsMinRows);
    const Weight& W = weight(c.w, c.act, c.n_out, c.n_in, Values::random);
    const Tensor xd = upload(make_x(c.m, c.n_in, c.act, W.input_scale, c.t, Values::random), c.t, {c.m, c.n_in});
    const Tensor by_default = empty(c.t, {c.m, c.n_out}), by_auto = empty(c.t, {c.m, c.n_out});
    const Tensor by_ws = empty(c.t, {c.m, c.n_out});
    const Tensor alone_ws = empty(c.t, {c.m, c.n_out}), alone_lt = empty(c.t, {c.m, c.n_out});
    gpu->linear_fp8(by_default, xd, W.gpu, Tensor(), false);
    gpu->synchronize();
    auto_backend->linear_fp8(by_auto, xd, W.gpu, Tensor(), false);
    auto_backend->synchronize();
    ws_backend->linear_fp8(by_ws, xd, W.gpu, Tensor(), false);
    ws_backend->synchronize();
    const int64_t n_groups = c.act == Fp8ActScheme::dynamic_group128 ? c.n_in / 128 : 1;
    void* cd = gpu->alloc(size_t(c.m * c.n_in));
    owned_.push_back(cd);
    const Tensor codes(cd, DType::fp8_e4m3, Device::cuda, {c.m, c.n_in});
    const Tensor scales = empty(DType::f32, {n_groups, c.m});
    cuda::launch_fp8_quantize_act(codes, scales, xd, W.gpu, stream());
    cuda::launch_fp8_gemm_wgmma_ws(alone_ws, codes, scales, W.gpu, Tensor(), false, stream());
    const std::vector<float> ws_alone = download(alone_ws);
    EXPECT_EQ(download(by_ws), ws_alone) << "SEAM_FP8_GEMM=ws: not the warp-specialised GEMM";
    if (c.w == Fp8WeightScheme::per_channel) {
      ASSERT_TRUE(lt.run(alone_lt, codes, scales, W.gpu, Tensor(), false, false, stream()));
      const std::vector<float> lt_alone = download(alone_lt);
      EXPECT_EQ(download(by_default), lt_alone) << "default: not cuBLASLt's route";
      EXPECT_EQ(download(by_auto), lt_alone) << "SEAM_FP8_GEMM=auto: not cuBLASLt's route";
    } else {
      EXPECT_EQ(download(by_default), ws_alone) << "default: not the warp-specialised GEMM";
    }
  }
}

// What it refuses (the old routes take these): K not a multiple of 128, N not a multiple of 8,
// codes not contiguous; launching anyway is a clear error.
TEST_F(CudaFp8GemmWgmma, RefusesOtherShapes) {
  const Weight& ok = weight(Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 128, 256, Values::exact);
  const Tensor codes = empty(DType::f32, {64, 64});  // 64 x 256 bytes of storage
  const Tensor c256(codes.data, DType::fp8_e4m3, Device::cuda, {64, 256});
  EXPECT_TRUE(cuda::fp8_gemm_wgmma_applies(empty(DType::bf16, {64, 128}), c256, ok.gpu));
  Fp8Weight k200 = ok.gpu;  // K 200: a view of the same codes
  k200.w = Tensor(ok.gpu.w.data, DType::fp8_e4m3, Device::cuda, {128, 200});
  EXPECT_FALSE(cuda::fp8_gemm_wgmma_applies(empty(DType::bf16, {64, 128}),
                                            Tensor(codes.data, DType::fp8_e4m3, Device::cuda, {64, 200}), k200));
  Fp8Weight n100 = ok.gpu;
  n100.w = Tensor(ok.gpu.w.data, DType::fp8_e4m3, Device::cuda, {100, 256});
  EXPECT_FALSE(cuda::fp8_gemm_wgmma_applies(empty(DType::bf16, {64, 100}), c256, n100));
  const Tensor strided(codes.data, DType::fp8_e4m3, Device::cuda, {32, 256});
  Tensor every_other = strided;
  every_other.stride[0] = 512;
  EXPECT_FALSE(cuda::fp8_gemm_wgmma_applies(empty(DType::bf16, {32, 128}), every_other, ok.gpu));
  EXPECT_THROW(cuda::launch_fp8_gemm_wgmma(empty(DType::bf16, {64, 100}), c256, empty(DType::f32, {1, 64}), n100,
                                           Tensor(), false, stream()),
               Error);
  // The warp-specialised kernel takes the same shapes and refuses the same.
  EXPECT_TRUE(cuda::fp8_gemm_wgmma_ws_applies(empty(DType::bf16, {64, 128}), c256, ok.gpu));
  EXPECT_FALSE(cuda::fp8_gemm_wgmma_ws_applies(empty(DType::bf16, {64, 128}),
                                               Tensor(codes.data, DType::fp8_e4m3, Device::cuda, {64, 200}), k200));
  EXPECT_FALSE(cuda::fp8_gemm_wgmma_ws_applies(empty(DType::bf16, {64, 100}), c256, n100));
  EXPECT_FALSE(cuda::fp8_gemm_wgmma_ws_applies(empty(DType::bf16, {32, 128}), every_other, ok.gpu));
  EXPECT_THROW(cuda::launch_fp8_gemm_wgmma_ws(empty(DType::bf16, {64, 100}), c256, empty(DType::f32, {1, 64}), n100,
                                              Tensor(), false, stream()),
               Error);
}

// The tile rule: 128 x 128 where that fills the GPU, else 64 rows and the widest N that does.
TEST(Fp8GemmWgmmaTile, FillsTheMultiprocessors) {
  using cuda::fp8_gemm_wgmma_tile;
  const int sms = 132;
  EXPECT_EQ(fp8_gemm_wgmma_tile(4096, 4096, sms).rows, 128);
  EXPECT_EQ(fp8_gemm_wgmma_tile(4096, 4096, sms).cols, 128);
  EXPECT_EQ(fp8_gemm_wgmma_tile(64, 4096, sms).rows, 64);  // 64 x 32: 128 blocks, the most there are
  EXPECT_EQ(fp8_gemm_wgmma_tile(64, 4096, sms).cols, 32);
  EXPECT_EQ(fp8_gemm_wgmma_tile(64, 6144, sms).cols, 32);    // 96 blocks 64 wide: too few; 192 of 32
  EXPECT_EQ(fp8_gemm_wgmma_tile(64, 28672, sms).cols, 128);  // 224 blocks of 128
  EXPECT_EQ(fp8_gemm_wgmma_tile(300, 4096, sms).rows, 64);   // 3 x 32 = 96 blocks of 128 x 128: too few
  EXPECT_EQ(fp8_gemm_wgmma_tile(300, 4096, sms).cols, 128);  // 5 x 32 = 160
}

}  // namespace
}  // namespace seam::test
