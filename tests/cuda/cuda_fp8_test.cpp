// The CUDA FP8 linear against the CPU reference (backend.h "FP8 linear"): the activation
// quantization bit for bit (codes and scales), and the whole op per weight scheme, activation
// scheme and activation dtype, with bias and accumulate, strided rows, an all-zero row and a
// saturating outlier; each kernel alone (the GEMV with its fused quantization, cuBLASLt per
// scale mode) over rows 1, 2, 7, 16, 64, 300; graph capture of the GEMV.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>

#include "backend/cpu/fp8_cpu.h"
#include "backend/cuda/fp8_cublaslt.h"
#include "backend/cuda/fp8_gated_act_quantize.h"
#include "backend/cuda/fp8_gemm_wgmma.h"
#include "backend/cuda/fp8_gemv.h"
#include "backend/cuda/fp8_quantize.h"
#include "backend/cuda/fp8_rms_norm_quantize.h"
#include "core/fp8.h"
#include "cuda_test_util.h"
#include "model/fp8_linear.h"

namespace seam::test {
namespace {

// float32 outputs: the CUDA-core kernels differ from the reference by the order of float32 sums
// only; a tensor-core product (cuBLASLt E4M3) by Hopper's FP8 accumulation, whose partial sums
// keep ~13 mantissa bits between cuBLASLt's float32 promotions: 5.4e-4 of max|ref| measured on
// the H200 at K = 256 (SCALAR_32F, a50493f). That is the format's tensor-core agreement; the bound
// below leaves room for it to grow linearly in K up to the tests' K = 1,024 (2.2e-3), and is
// still far below a wrong scale or row (errors of order max|ref|). The f16 / bf16 bounds (one
// output rounding, 2^-11 / 2^-8) are above it and stay as they are.
constexpr Tolerance kExactF32{1e-4, 1e-5};
constexpr Tolerance kTensorCoreF32{1e-3, 4e-3};

struct Case {
  Fp8WeightScheme w;
  Fp8ActScheme act;
  int64_t n, in, out;
  float ub = 0.f;
  bool bias = false, accumulate = false;
  // block128: scales uniform over each 128-row block, with the compact copy
  // (Fp8Weight::w_scale_blocks) the cuBLASLt BLK128x128 mode reads.
  bool blocks = false;
};


class CudaFp8 : public CudaTest {
 protected:
  // An FP8 weight on both backends: random finite codes and positive scales.
  struct Weights {
    std::vector<uint8_t> codes;
    std::vector<float> scales;
    std::vector<float> blocks;  // compact 128x128 block scales (Case::blocks)
    float input_scale = 0.02f;
    Fp8Weight cpu, gpu;
  };
  void make_weights(const Case& c, Weights& W) {
    W.codes.resize(size_t(c.out * c.in));
    for (auto& b : W.codes) {
      do b = uint8_t(rng()); while ((b & 0x7f) == 0x7f);
    }
    const int64_t n_kb = (c.in + 127) / 128;
    const int64_t n_s = c.w == Fp8WeightScheme::per_tensor ? 1 : c.w == Fp8WeightScheme::per_channel ? c.out : c.out * n_kb;
    std::uniform_real_distribution<float> u(0.001f, 0.02f);
    W.scales.resize(size_t(n_s));
    for (auto& s : W.scales) s = u(rng);
    if (c.blocks) {  // one row of scales per 128-row block, as a checkpoint's 128x128 blocks
      for (int64_t o = 0; o < c.out; ++o)
        std::copy_n(W.scales.begin() + (o / 128 * 128) * n_kb, n_kb, W.scales.begin() + o * n_kb);
      W.blocks = compact_block_scales(W.scales.data(), c.out, n_kb);
      EXPECT_FALSE(W.blocks.empty());
    }
    for (Fp8Weight* f : {&W.cpu, &W.gpu}) {
      f->w_scheme = c.w;
      f->act = c.act;
      f->act_amax_ub = c.ub;
    }
    W.cpu.w = Tensor(W.codes.data(), DType::fp8_e4m3, Device::cpu, {c.out, c.in});
    W.cpu.w_scale = c.w == Fp8WeightScheme::block128 ? Tensor(W.scales.data(), DType::f32, Device::cpu, {c.out, n_kb})
                                                     : Tensor(W.scales.data(), DType::f32, Device::cpu, {n_s});
    void* wd = gpu->alloc(W.codes.size());
    owned_.push_back(wd);
    gpu->copy_h2d(wd, W.codes.data(), W.codes.size());
    W.gpu.w = Tensor(wd, DType::fp8_e4m3, Device::cuda, {c.out, c.in});
    W.gpu.w_scale = c.w == Fp8WeightScheme::block128 ? upload(W.scales, DType::f32, {c.out, n_kb})
                                                     : upload(W.scales, DType::f32, {n_s});
    if (c.blocks) W.gpu.w_scale_blocks = upload(W.blocks, DType::f32, {(c.out + 127) / 128, n_kb});
    if (c.act == Fp8ActScheme::static_per_tensor) {
      W.cpu.input_scale = Tensor(&W.input_scale, DType::f32, Device::cpu, {1});
      W.gpu.input_scale = upload({W.input_scale}, DType::f32, {1});
    }
    gpu->synchronize();
  }
  // x [n, in] with an all-zero row 1 and an outlier, rounded to `t` so both backends see the same values.
  std::vector<float> make_x(const Case& c, DType t) {
    std::vector<float> x = random_normal(size_t(c.n * c.in), rng, 2.f);
    for (int64_t k = 0; k < c.in && c.n > 1; ++k) x[size_t(c.in + k)] = 0.f;
    if (c.n > 2) x[size_t(2 * c.in + 3)] = 900.f;
    return round_to(x, t);
  }
  // The op on the GPU (gpu_op, default the backend's linear_fp8) against the CPU reference for
  // one case: x as a strided view (every other row of a [2n, in] buffer), random out0 / bias.
  // f32: summation order only (the GEMV's FMAs are float32; cuBLASLt promotes its FP8 partial
  // sums to float32, so its error is a few float32 roundings of partial sums); f16/bf16: one
  // rounding of the output (and of out0/bias, which both sides share).
  using GpuOp = std::function<void(Tensor out, Tensor x, const Fp8Weight& w, Tensor bias, bool accumulate)>;
  void check(const Case& c, DType t, const GpuOp& gpu_op = {}, Tolerance f32 = kExactF32) {
    SCOPED_TRACE(std::string(short_name(t)) + " " + fp8_weight_scheme_name(c.w) + " / " + fp8_act_scheme_name(c.act) +
                 " n " + std::to_string(c.n) + " in " + std::to_string(c.in) + " out " + std::to_string(c.out) +
                 (c.blocks ? " compact blocks" : ""));
    Weights W;
    make_weights(c, W);
    const std::vector<float> x = make_x(c, t);
    std::vector<float> bias = round_to(random_normal(size_t(c.out), rng), t);
    std::vector<float> out0 = round_to(random_normal(size_t(c.n * c.out), rng), t);
    std::vector<float> xc = x, bc = bias, oc = out0;
    cpu.linear_fp8(host_view(oc, {c.n, c.out}), host_view(xc, {c.n, c.in}), W.cpu,
                   c.bias ? host_view(bc, {c.out}) : Tensor(), c.accumulate);
    std::vector<float> xs(size_t(2 * c.n * c.in), 0.f);
    for (int64_t i = 0; i < c.n; ++i)
      std::copy(x.begin() + i * c.in, x.begin() + (i + 1) * c.in, xs.begin() + 2 * i * c.in);
    Tensor xd = upload(xs, t, {c.n, 2 * c.in}).slice_cols(0, c.in);
    Tensor od = upload(out0, t, {c.n, c.out});
    Tensor bd = c.bias ? upload(bias, t, {c.out}) : Tensor();
    if (gpu_op) gpu_op(od, xd, W.gpu, bd, c.accumulate);
    else gpu->linear_fp8(od, xd, W.gpu, bd, c.accumulate);
    expect_close(download(od), oc, tolerance_for(t, f32), "linear_fp8");
  }
  cudaStream_t stream() { return static_cast<cudaStream_t>(cuda_backend_stream(*gpu)); }
  // More row tiles than the persistent GEMV's grid (fp8_gemv.cu: at most its resident blocks of
  // 256 threads, each staging `staged_bytes` of x) can hold on this GPU, whatever its occupancy:
  // each block then computes several tiles.
  int64_t tiles_past_grid(int64_t staged_bytes) {
    int dev = 0;
    cudaDeviceProp p{};
    EXPECT_EQ(cudaGetDevice(&dev), cudaSuccess);
    EXPECT_EQ(cudaGetDeviceProperties(&p, dev), cudaSuccess);
    const int64_t per_sm = std::min<int64_t>(p.maxThreadsPerMultiProcessor / 256,
                                             int64_t(p.sharedMemPerMultiprocessor) / staged_bytes);
    return int64_t(p.multiProcessorCount) * std::max<int64_t>(per_sm, 1) + 3;
  }

  // Compute capability 8.9+: where SEAM_FP8_GEMV defaults to the tensor-core GEMV (fp8_gemv.h).
  static bool e4m3_tensor_cores() {
    int dev = 0;
    cudaDeviceProp p{};
    EXPECT_EQ(cudaGetDevice(&dev), cudaSuccess);
    EXPECT_EQ(cudaGetDeviceProperties(&p, dev), cudaSuccess);
    return p.major * 10 + p.minor >= 89;
  }

  void TearDown() override {
    if (gpu) {
      gpu->synchronize();
      for (void* p : owned_) gpu->release(p);
    }
    CudaTest::TearDown();
  }
  std::vector<void*> owned_;
};

// The GEMV tests run on both inner loops (SEAM_FP8_GEMV, fp8_gemv.h) and on variants of the mma
// loop (Fp8GemvMmaTuning: split K, unroll, reload): the backend `gpu` is built with the
// parameter's environment, and launch_fp8_gemv called directly takes the same kernel and variant.
// mma: float32 outputs at the tensor-core bound (its 128-k partial sums), every fusion still equal
// to its decomposition bit for bit (the decomposition's GEMV is the same kernel and variant).
// Parameter: "fma", or "mma" with optional "_ksplit<1|2|4|auto>", "_unroll<2|4|8>", "_rolling",
// "_prefetch<steps>".
class CudaFp8Gemv : public CudaFp8, public ::testing::WithParamInterface<const char*> {
 protected:
  void SetUp() override {
    const bool mma = kernel() == cuda::Fp8GemvKernel::mma;
    if (mma && cuda_device_present(nullptr) && !e4m3_tensor_cores()) GTEST_SKIP() << "no E4M3 tensor cores";
    const cuda::Fp8GemvMmaTuning t = tuning();
    setenv("SEAM_FP8_GEMV", mma ? "mma" : "fma", 1);
    setenv("SEAM_FP8_GEMV_MMA_KSPLIT", t.ksplit == 0 ? "auto" : std::to_string(t.ksplit).c_str(), 1);
    setenv("SEAM_FP8_GEMV_MMA_UNROLL", std::to_string(t.unroll).c_str(), 1);
    setenv("SEAM_FP8_GEMV_MMA_RELOAD", t.rolling ? "rolling" : "sweep", 1);
    setenv("SEAM_FP8_GEMV_MMA_PREFETCH", std::to_string(t.prefetch).c_str(), 1);
    CudaFp8::SetUp();
    for (const char* v : {"SEAM_FP8_GEMV", "SEAM_FP8_GEMV_MMA_KSPLIT", "SEAM_FP8_GEMV_MMA_UNROLL",
                          "SEAM_FP8_GEMV_MMA_RELOAD", "SEAM_FP8_GEMV_MMA_PREFETCH"})
      unsetenv(v);
  }
  cuda::Fp8GemvKernel kernel() const {
    return std::string(GetParam()).rfind("mma", 0) == 0 ? cuda::Fp8GemvKernel::mma : cuda::Fp8GemvKernel::fma;
  }
  cuda::Fp8GemvMmaTuning tuning() const {
    const std::string p = GetParam();
    cuda::Fp8GemvMmaTuning t;
    const auto after = [&](const char* key) -> std::string {
      const size_t at = p.find(key);
      if (at == std::string::npos) return "";
      const size_t from = at + std::strlen(key);
      return p.substr(from, p.find('_', from) - from);
    };
    if (const std::string k = after("_ksplit"); !k.empty()) t.ksplit = k == "auto" ? 0 : std::stoi(k);
    if (const std::string u = after("_unroll"); !u.empty()) t.unroll = std::stoi(u);
    t.rolling = p.find("_rolling") != std::string::npos || t.unroll == 8;
    if (const std::string f = after("_prefetch"); !f.empty()) t.prefetch = std::stoi(f);
    return t;
  }
  void gemv(Tensor out, Tensor x, const Fp8Weight& w, Tensor bias, bool acc, const cuda::Fp8GemvFusion& f = {}) {
    cuda::launch_fp8_gemv(out, x, w, bias, acc, stream(), f, kernel(), tuning());
  }
  Tolerance f32_bound() const { return kernel() == cuda::Fp8GemvKernel::mma ? kTensorCoreF32 : kExactF32; }
};

// Widths: 300 (not whole 8-element vectors: the scalar kernel), 200 (vectors, a partial
// 128-group), 4096, 20480 (16 vectors a thread: the register path's largest).
TEST_F(CudaFp8, QuantizeIsBitExact) {
  for (DType t : {DType::f32, DType::bf16, DType::f16})
    for (auto act : {Fp8ActScheme::dynamic_per_token, Fp8ActScheme::dynamic_group128, Fp8ActScheme::static_per_tensor})
      for (float ub : {0.f, 3.f})
        for (int64_t in : {300, 200, 4096, 20480}) {
          const Case c{act == Fp8ActScheme::dynamic_group128 ? Fp8WeightScheme::block128 : Fp8WeightScheme::per_channel,
                       act, 5, in, 8, ub};
          SCOPED_TRACE(std::string(short_name(t)) + " " + fp8_act_scheme_name(act) + " ub " + std::to_string(ub) +
                       " in " + std::to_string(in));
          Weights W;
          make_weights(c, W);
          const std::vector<float> x = make_x(c, t);
          const int64_t n_groups = act == Fp8ActScheme::dynamic_group128 ? (in + 127) / 128 : 1;
          std::vector<uint8_t> want_codes(size_t(c.n * c.in));
          std::vector<float> want_scales(size_t(c.n * n_groups));
          for (int64_t i = 0; i < c.n; ++i)
            fp8_cpu::quantize_row(x.data() + i * c.in, c.in, W.cpu, want_codes.data() + i * c.in,
                                  want_scales.data() + i * n_groups);
          void* cd = gpu->alloc(want_codes.size());
          owned_.push_back(cd);
          const Tensor codes(cd, DType::fp8_e4m3, Device::cuda, {c.n, c.in});
          const Tensor scales = empty(DType::f32, {n_groups, c.n});
          const Tensor xd = upload(x, t, {c.n, c.in});
          cuda::launch_fp8_quantize_act(codes, scales, xd, W.gpu, static_cast<cudaStream_t>(cuda_backend_stream(*gpu)));
          std::vector<uint8_t> got_codes(want_codes.size());
          gpu->copy_d2h(got_codes.data(), cd, got_codes.size());
          const std::vector<float> got_t = download(scales);  // [n_groups, n]: token fastest
          std::vector<float> got_scales(got_t.size());
          for (int64_t i = 0; i < c.n; ++i)
            for (int64_t g = 0; g < n_groups; ++g) got_scales[size_t(i * n_groups + g)] = got_t[size_t(g * c.n + i)];
          EXPECT_EQ(got_codes, want_codes);
          EXPECT_EQ(got_scales, want_scales);
        }
}

TEST_F(CudaFp8, LinearMatchesCpu) {
  const std::vector<Case> cases = {
      {Fp8WeightScheme::per_tensor, Fp8ActScheme::dynamic_per_token, 7, 256, 96},
      {Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 5, 200, 70, 0.f, true, true},
      {Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 1, 4096, 512, 1200.f},
      {Fp8WeightScheme::per_tensor, Fp8ActScheme::static_per_tensor, 4, 96, 33, 0.f, true, false},
      {Fp8WeightScheme::block128, Fp8ActScheme::dynamic_group128, 6, 300, 140, 0.f, false, true},
      {Fp8WeightScheme::block128, Fp8ActScheme::dynamic_group128, 33, 1024, 384},
      // 16 rows and more: cuBLASLt's E4M3 GEMM for per-channel x per-token and per-tensor x static.
      {Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 64, 1024, 256, 0.f, true, true},
      {Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 200, 512, 384},
      {Fp8WeightScheme::per_tensor, Fp8ActScheme::static_per_tensor, 48, 256, 128, 0.f, false, true},
  };
  // Past the GEMV's rows (SEAM_FP8_GEMM's default route): per-channel weights run cuBLASLt's
  // unscaled tensor-core GEMM (K a multiple of 16); what cuBLASLt refuses (128-block weights, and
  // per-tensor ones, which only tests make: the loader widens them to per-channel) runs the wgmma
  // GEMM where it applies (fp8_gemm_wgmma.h: sm_90a, K % 128 == 0, N % 8 == 0): the tensor-core
  // bound. The rest run the CUDA-core kernel and hold the exact bound.
  for (DType t : {DType::f32, DType::bf16, DType::f16})
    for (const Case& c : cases) {
      Fp8Weight shape_only;  // the route depends on shapes, alignment and the GPU only
      shape_only.w = empty(DType::fp8_e4m3, {c.out, c.in});
      shape_only.w_scheme = c.w;
      const bool wgmma =
          cuda::fp8_gemm_wgmma_applies(empty(t, {c.n, c.out}), empty(DType::fp8_e4m3, {c.n, c.in}), shape_only);
      // GEMV rows (K % 16 == 0): SEAM_FP8_GEMV's default on E4M3 tensor cores is the mma loop.
      const bool gemv_mma = c.n <= cuda::kFp8GemvMaxRows && c.in % 16 == 0 && e4m3_tensor_cores();
      const bool tensor_cores =
          gemv_mma ||
          (c.n > cuda::kFp8GemvMaxRows && (wgmma || (c.w == Fp8WeightScheme::per_channel && c.in % 16 == 0)));
      check(c, t, {}, tensor_cores ? kTensorCoreF32 : kExactF32);
    }
}

// The GEMV alone (launch_fp8_gemv: quantization fused into its prologue) for every scheme pair
// at each batch it serves, odd output counts (inactive rows of the last block), a 4096-wide
// K, more row tiles than the persistent grid (a 14,336-wide K too); and what it refuses.
TEST_P(CudaFp8Gemv, GemvMatchesCpu) {
  const auto gemv_op = [&](Tensor out, Tensor x, const Fp8Weight& w, Tensor bias, bool acc) {
    ASSERT_TRUE(cuda::fp8_gemv_applies(out, x, w));
    gemv(out, x, w, bias, acc);
  };
  const Tolerance f32 = f32_bound();
  // Rows of more tiles (16 rows each) than the grid, the last tile partly inactive.
  const int64_t many_rows = 16 * tiles_past_grid(256 * 4) + 5, many_wide = 16 * tiles_past_grid(14336 * 4) + 9;
  for (int64_t n = 1; n <= cuda::kFp8GemvMaxRows; ++n)
    for (DType t : {DType::f32, DType::bf16}) {
      check({Fp8WeightScheme::per_tensor, Fp8ActScheme::dynamic_per_token, n, 256, 70}, t, gemv_op, f32);
      check({Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, n, 256, many_rows, 0.f, true, true}, t,
            gemv_op, f32);
      check({Fp8WeightScheme::block128, Fp8ActScheme::dynamic_group128, n, 384, many_rows}, t, gemv_op, f32);
      if (n == 1) check({Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, n, 14336, many_wide}, t, gemv_op, f32);
      check({Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, n, 4096, 130, 0.f, true, true}, t, gemv_op, f32);
      check({Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, n, 512, 33, 3.f}, t, gemv_op, f32);
      if (n <= 2) check({Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, n, 14336, 40}, t, gemv_op, f32);
      check({Fp8WeightScheme::per_tensor, Fp8ActScheme::static_per_tensor, n, 96, 48, 0.f, true, false}, t, gemv_op, f32);
      check({Fp8WeightScheme::per_channel, Fp8ActScheme::static_per_tensor, n, 160, 17, 0.f, false, true}, t, gemv_op, f32);
      check({Fp8WeightScheme::block128, Fp8ActScheme::dynamic_group128, n, 400, 140, 0.f, false, true}, t, gemv_op, f32);
      check({Fp8WeightScheme::block128, Fp8ActScheme::dynamic_group128, n, 1024, 256, 0.f, true, false, true}, t, gemv_op, f32);
    }
  // Refused: K not a multiple of 16, more rows than it serves, x too large to stage.
  Weights W;
  make_weights({Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 1, 200, 8}, W);
  EXPECT_FALSE(cuda::fp8_gemv_applies(empty(DType::bf16, {1, 8}), empty(DType::bf16, {1, 200}), W.gpu));
  Weights W2;
  make_weights({Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 1, 256, 8}, W2);
  EXPECT_TRUE(cuda::fp8_gemv_applies(empty(DType::bf16, {4, 8}), empty(DType::bf16, {4, 256}), W2.gpu));
  EXPECT_FALSE(cuda::fp8_gemv_applies(empty(DType::bf16, {5, 8}), empty(DType::bf16, {5, 256}), W2.gpu));
  Weights W3;  // Llama-3.1-8B's down_proj width: batches 1 and 2 staged, 3 not
  make_weights({Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 1, 14336, 8}, W3);
  EXPECT_TRUE(cuda::fp8_gemv_applies(empty(DType::bf16, {2, 8}), empty(DType::bf16, {2, 14336}), W3.gpu));
  EXPECT_FALSE(cuda::fp8_gemv_applies(empty(DType::bf16, {3, 8}), empty(DType::bf16, {3, 14336}), W3.gpu));
}

// cuBLASLt alone, each route (fp8_cublaslt.h) at rows 1, 2, 7, 16, 64, 300 against the
// reference: the outer-vector and 128-block scale modes where this GPU's cuBLASLt has an
// algorithm for them (asked through has_algorithm; where it has none, run_route must refuse and
// enqueue nothing: the H200 has neither), and the unscaled product + scale epilogue, which every
// GPU with FP8 tensor cores (compute capability 8.9 and up) must run at rows that are multiples
// of 16 (other row counts where cuBLASLt offers it). Per-tensor weights it refuses. Every failure
// names the route. float32 outputs are held to the tensor-core bound (kTensorCoreF32).
TEST_F(CudaFp8, CublasLtModesMatchCpu) {
  using Route = cuda::Fp8CublasLt::Route;
  cuda::Fp8CublasLt lt;
  {
    Weights W;
    make_weights({Fp8WeightScheme::per_tensor, Fp8ActScheme::static_per_tensor, 16, 256, 96}, W);
    EXPECT_FALSE(lt.run(empty(DType::bf16, {16, 96}), empty(DType::fp8_e4m3, {16, 256}), empty(DType::f32, {1, 16}),
                        W.gpu, Tensor(), false, false, stream()));
  }
  int major = 0, minor = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0), cudaSuccess);
  const bool fp8_tensor_cores = major * 10 + minor >= 89;
  int n_ran = 0, n_unavailable = 0;
  for (Route route : {Route::outer, Route::block, Route::unscaled}) {
    const std::string name = cuda::Fp8CublasLt::route_name(route);
    SCOPED_TRACE("route " + name);
    const auto run = [&](Tensor out, Tensor x, const Fp8Weight& w, Tensor bias, bool acc) {
      const int64_t n = x.size(0), n_in = x.size(1);
      const int64_t n_groups = w.act == Fp8ActScheme::dynamic_group128 ? (n_in + 127) / 128 : 1;
      void* cd = gpu->alloc(size_t(n * n_in));
      owned_.push_back(cd);
      const Tensor codes(cd, DType::fp8_e4m3, Device::cuda, {n, n_in});
      const Tensor scales = empty(DType::f32, {n_groups, n});
      cuda::launch_fp8_quantize_act(codes, scales, x, w, stream());
      EXPECT_TRUE(lt.run_route(route, out, codes, scales, w, bias, acc, false, stream()))
          << name << ": an algorithm was offered but the route did not run";
      ++n_ran;
    };
    const std::vector<Case> cases =
        route == Route::block
            ? std::vector<Case>{{Fp8WeightScheme::block128, Fp8ActScheme::dynamic_group128, 0, 512, 384, 0.f, false,
                                 true, true},
                                {Fp8WeightScheme::block128, Fp8ActScheme::dynamic_group128, 0, 1024, 200, 0.f, true,
                                 false, true}}
            : std::vector<Case>{
                  {Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 0, 512, 160, 0.f, false, true},
                  {Fp8WeightScheme::per_channel, Fp8ActScheme::static_per_tensor, 0, 128, 48},
                  {Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 0, 1024, 256, 0.f, true, true}};
    for (int64_t n : {1, 2, 7, 16, 64, 300})
      for (DType t : {DType::bf16, DType::f32})
        for (Case c : cases) {
          c.n = n;
          Weights W;
          make_weights(c, W);
          const Tensor probe_out = empty(t, {n, c.out});
          if (!lt.has_algorithm(route, n, W.gpu, t)) {
            ++n_unavailable;
            // FP8 tensor cores take any n that is a multiple of 16 (cuBLASLt's FP8 alignment).
            EXPECT_FALSE(route == Route::unscaled && fp8_tensor_cores && n % 16 == 0)
                << name << ": no algorithm at n " << n << " on a GPU of compute capability " << major << "." << minor;
            EXPECT_FALSE(lt.run_route(route, probe_out, empty(DType::fp8_e4m3, {n, c.in}),
                                      empty(DType::f32, {c.act == Fp8ActScheme::dynamic_group128 ? (c.in + 127) / 128 : 1, n}),
                                      W.gpu, Tensor(), false, false, stream()))
                << name << ": ran without an algorithm";
            continue;
          }
          check(c, t, run, kTensorCoreF32);
        }
  }
  if (fp8_tensor_cores) EXPECT_GT(n_ran, 0);
  std::printf("cuBLASLt FP8 routes: %d cases ran, %d had no algorithm on this GPU (sm_%d%d)\n", n_ran, n_unavailable,
              major, minor);
}

// Through the backend at the batch sizes of decode and prefill, each path: rows 1, 2 (GEMV),
// 7 (cuBLASLt below 16), 16, 64, 300; block weights without compact scales and K % 16 != 0
// (the CUDA-core kernel).
TEST_F(CudaFp8, LinearRowsMatchCpu) {
  for (int64_t n : {1, 2, 7, 16, 64, 300}) {
    check({Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, n, 1024, 256, 0.f, true, true}, DType::bf16);
    check({Fp8WeightScheme::per_tensor, Fp8ActScheme::dynamic_per_token, n, 256, 64}, DType::bf16);
    check({Fp8WeightScheme::block128, Fp8ActScheme::dynamic_group128, n, 512, 256, 0.f, false, true, true}, DType::bf16);
    check({Fp8WeightScheme::block128, Fp8ActScheme::dynamic_group128, n, 384, 96}, DType::bf16);
    check({Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, n, 200, 40}, DType::f16);
  }
}

// The GEMV's fusions (Backend::rms_norm_linear_fp8 / rms_norm_gate_up_act_fp8 at decode batches)
// equal the decomposition on the GPU bit for bit: the prologue's norm is rms_norm.cu's
// arithmetic in its order, the epilogue's activation gated_act.cu's on the rounded gate and up.
TEST_P(CudaFp8Gemv, GemvFusionsEqualDecomposition) {
  const std::vector<Case> cases = {
      {Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 1, 1024, 320},
      {Fp8WeightScheme::block128, Fp8ActScheme::dynamic_group128, 1, 512, 256},
      {Fp8WeightScheme::per_tensor, Fp8ActScheme::static_per_tensor, 1, 256, 96},
      // More GLU items (8 a tile) and rows (16 a tile) than the persistent grid holds.
      {Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 1, 256, 2 * (8 * tiles_past_grid(256 * 4) + 3)},
  };
  for (DType t : {DType::bf16, DType::f32})
    for (Case c : cases)
      for (int64_t n = 1; n <= cuda::kFp8GemvMaxRows; ++n) {
        c.n = n;
        SCOPED_TRACE(std::string(short_name(t)) + " " + fp8_weight_scheme_name(c.w) + " n " + std::to_string(n));
        Weights W;
        make_weights(c, W);
        const Tensor x = upload(make_x(c, t), t, {c.n, c.in});
        const Tensor g = upload(round_to(random_normal(size_t(c.in), rng), t), t, {c.in});
        const Tensor normed = empty(t, {c.n, c.in});
        const int64_t inter = c.out / 2;
        // Decomposed: the norm kernel, then the GEMV (and the gated activation).
        const Tensor want = empty(t, {c.n, c.out}), want_act = empty(t, {c.n, inter});
        gpu->rms_norm(normed, x, g, 1e-5f);
        gpu->linear_fp8(want, normed, W.gpu, Tensor(), false);
        gpu->gated_act(want_act, want, Activation::silu);
        const Tensor got = empty(t, {c.n, c.out}), got_act = empty(t, {c.n, inter}), gate_up = empty(t, {c.n, c.out});
        cuda::Fp8GemvFusion norm;  // the fused path is the one taken
        norm.norm_weight = g;
        norm.eps = 1e-5f;
        cuda::Fp8GemvFusion glu = norm;
        glu.glu = true;
        ASSERT_TRUE(cuda::fp8_gemv_fusion_applies(got, x, W.gpu, norm));
        ASSERT_TRUE(cuda::fp8_gemv_fusion_applies(got_act, x, W.gpu, glu));
        gpu->rms_norm_linear_fp8(got, normed, x, g, 1e-5f, W.gpu, Tensor());
        gpu->rms_norm_gate_up_act_fp8(got_act, gate_up, normed, x, g, 1e-5f, W.gpu, Activation::silu);
        EXPECT_EQ(download(got), download(want));
        EXPECT_EQ(download(got_act), download(want_act));
        // The GELU-tanh form (Gemma) against its decomposition too.
        gpu->gated_act(want_act, want, Activation::gelu_tanh);
        gpu->rms_norm_gate_up_act_fp8(got_act, gate_up, normed, x, g, 1e-5f, W.gpu, Activation::gelu_tanh);
        EXPECT_EQ(download(got_act), download(want_act));
      }
}

// The GEMV's RoPE + KV-store epilogue (Backend::rms_norm_qkv_rope_store_fp8 at decode batches)
// equals the decomposition on the GPU (the norm-fused GEMV, then rope_store_kv: rope.cu) bit for
// bit: qkv and both caches, at rows 1..4, caches in x's dtype and E4M3 (scales not 1), full and
// partial rotary dims (pass-through pairs), a LongRoPE table used from a position on, bias,
// per-channel and 128-block weights, and a row whose slot is outside the pool (not stored).
TEST_P(CudaFp8Gemv, GemvRopeStoreEqualsDecomposition) {
  struct Rope {
    Case c;
    int n_heads, n_kv, d, rot_half;
    bool long_table;
  };
  // (heads + 2 * 2) * 64 / 2 rotary / pass-through pairs, 8 a tile: more tiles than the grid.
  const int n_heads_many = 2 * int(tiles_past_grid(256 * 4) / 8 + 1);
  const std::vector<Rope> shapes = {
      {{Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 0, 256, (4 + 2 * 2) * 64, 0.f, true}, 4, 2, 64,
       32, false},
      {{Fp8WeightScheme::block128, Fp8ActScheme::dynamic_group128, 0, 512, (2 + 2 * 1) * 128}, 2, 1, 128, 32, true},
      {{Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 0, 256, (n_heads_many + 2 * 2) * 64, 0.f, true},
       n_heads_many, 2, 64, 24, true},
  };
  const int64_t n_slots = 16;
  for (DType t : {DType::bf16, DType::f16})
    for (const Rope& rs : shapes)
      for (bool fp8_cache : {false, true})
        for (int64_t m = 1; m <= cuda::kFp8GemvMaxRows; ++m) {
          Case c = rs.c;
          c.n = m;
          SCOPED_TRACE(std::string(short_name(t)) + " " + fp8_weight_scheme_name(c.w) + " d " + std::to_string(rs.d) +
                       " rot_half " + std::to_string(rs.rot_half) + (fp8_cache ? " fp8 cache" : " cache in x's dtype") +
                       " rows " + std::to_string(m));
          Weights W;
          make_weights(c, W);
          const Tensor x = upload(make_x(c, t), t, {m, c.in});
          const Tensor g = upload(round_to(random_normal(size_t(c.in), rng), t), t, {c.in});
          const Tensor bias = c.bias ? upload(round_to(random_normal(size_t(c.out), rng), t), t, {c.out}) : Tensor();
          HiLoTable freq = hi_lo_table(rs.rot_half, 10000.0), freq_long = hi_lo_table(rs.rot_half, 10000.0, 4.0);
          std::vector<int32_t> positions, slots;
          for (int64_t r = 0; r < m; ++r) {
            positions.push_back(int32_t(7 + 33331 * r));  // rows from 1 on past long_from (500), up to ~100,000
            slots.push_back(r == 2 ? -1 : int32_t(3 + 4 * r));  // row 2: outside the pool
          }
          RopeStoreArgs ra;
          ra.n_heads = rs.n_heads;
          ra.positions = upload_index(positions, {m});
          ra.slots = upload_index(slots, {m});
          ra.inv_freq = upload(freq.hi, DType::f32, {rs.rot_half});
          ra.inv_freq_lo = upload(freq.lo, DType::f32, {rs.rot_half});
          if (rs.long_table) {
            ra.inv_freq_long = upload(freq_long.hi, DType::f32, {rs.rot_half});
            ra.inv_freq_long_lo = upload(freq_long.lo, DType::f32, {rs.rot_half});
            ra.long_from = 500;
          }
          ra.kv_scales = fp8_cache ? KvScales{0.7f, 1.9f} : KvScales{};
          const DType cache_t = fp8_cache ? DType::fp8_e4m3 : t;
          const size_t cache_bytes = size_t(n_slots * rs.n_kv * rs.d) * dtype_size(cache_t);
          auto cache = [&] {  // zeroed, so unwritten slots compare equal too
            void* p = gpu->alloc(cache_bytes);
            owned_.push_back(p);
            std::vector<uint8_t> zero(cache_bytes, 0);
            gpu->copy_h2d(p, zero.data(), cache_bytes);
            return Tensor(p, cache_t, Device::cuda, {n_slots, rs.n_kv, rs.d});
          };
          auto bytes = [&](const Tensor& u) {
            std::vector<uint8_t> b(u.nbytes());
            gpu->copy_d2h(b.data(), u.data, b.size());
            gpu->synchronize();
            return b;
          };
          // Decomposed: the norm-fused GEMV, then rope_store_kv.
          RopeStoreArgs want_r = ra;
          want_r.k_cache = cache();
          want_r.v_cache = cache();
          const Tensor want = empty(t, {m, c.out}), normed = empty(t, {m, c.in});
          gpu->rms_norm_linear_fp8(want, normed, x, g, 1e-5f, W.gpu, bias);
          const int64_t q_size = int64_t(rs.n_heads) * rs.d, kv_size = int64_t(rs.n_kv) * rs.d;
          gpu->rope_store_kv(want.slice_cols(0, q_size).unflatten_last(rs.n_heads, rs.d),
                             want.slice_cols(q_size, kv_size).unflatten_last(rs.n_kv, rs.d),
                             want.slice_cols(q_size + kv_size, kv_size).unflatten_last(rs.n_kv, rs.d), ra.positions,
                             want_r.tables(), want_r.k_cache, want_r.v_cache, ra.slots, ra.kv_scales);
          // Fused: the path taken must be the GEMV's.
          RopeStoreArgs got_r = ra;
          got_r.k_cache = cache();
          got_r.v_cache = cache();
          const Tensor got = empty(t, {m, c.out});
          cuda::Fp8GemvFusion f;
          f.norm_weight = g;
          f.eps = 1e-5f;
          f.rope_store = true;
          f.rope = got_r;
          ASSERT_TRUE(cuda::fp8_gemv_fusion_applies(got, x, W.gpu, f));
          gpu->rms_norm_qkv_rope_store_fp8(got, normed, x, g, 1e-5f, W.gpu, bias, got_r);
          gpu->synchronize();
          // On a mismatch: how many elements differ and the first few, each as (row, column),
          // its head and dim (q, k or v; rotary pair i or pass-through) and got vs want values.
          const auto where = [&](const Tensor& gt, const Tensor& wt, const char* what) {
            const std::vector<uint8_t> gb = bytes(gt), wb = bytes(wt);
            if (gb == wb) return std::string();
            const size_t es = dtype_size(gt.dtype), n = gb.size() / es;
            const int64_t cols = gt.size(gt.ndim - 1) * (gt.ndim == 3 ? gt.size(1) : 1);
            std::vector<float> gf(n), wf(n);
            convert_to_f32(gb.data(), gt.dtype, gf.data(), n);
            convert_to_f32(wb.data(), wt.dtype, wf.data(), n);
            std::string s = std::string(what) + ": ";
            size_t n_diff = 0;
            for (size_t e = 0; e < n; ++e) {
              if (std::memcmp(gb.data() + e * es, wb.data() + e * es, es) == 0) continue;
              if (++n_diff > 6) continue;
              const int64_t row = int64_t(e) / cols, col = int64_t(e) % cols;
              const int64_t head = col / rs.d, dim = col % rs.d;
              const char* region = gt.ndim == 3 ? "kv" : head < rs.n_heads ? "q" : head < rs.n_heads + rs.n_kv ? "k" : "v";
              const bool rotated = gt.ndim == 3 ? what[0] == 'k' : head < rs.n_heads + rs.n_kv;
              const int64_t pair = rotated && dim < 2 * rs.rot_half ? dim % rs.rot_half : -1;
              uint32_t gbits = 0, wbits = 0;  // the raw element (little-endian)
              std::memcpy(&gbits, gb.data() + e * es, std::min<size_t>(es, 4));
              std::memcpy(&wbits, wb.data() + e * es, std::min<size_t>(es, 4));
              char buf[320];
              std::snprintf(buf, sizeof(buf),
                            "[%s %lld col %lld: %s head %lld dim %lld (%s %lld): got %.9g (0x%x) want %.9g (0x%x)] ",
                            gt.ndim == 3 ? "slot" : "row", (long long)row, (long long)col, region, (long long)head,
                            (long long)dim, pair >= 0 ? "rotary pair" : "not rotated, dim", (long long)(pair >= 0 ? pair : dim),
                            double(gf[e]), gbits, double(wf[e]), wbits);
              s += buf;
            }
            return s + std::to_string(n_diff) + " of " + std::to_string(n) + " elements differ";
          };
          EXPECT_EQ(where(got, want, "qkv"), "");
          EXPECT_EQ(where(got_r.k_cache, want_r.k_cache, "k cache"), "");
          EXPECT_EQ(where(got_r.v_cache, want_r.v_cache, "v cache"), "");
          // Something was stored (row 0's slot), so equal caches are not two untouched ones.
          const std::vector<uint8_t> kb = bytes(got_r.k_cache);
          EXPECT_TRUE(std::any_of(kb.begin(), kb.end(), [](uint8_t b) { return b != 0; }));
        }
}

// The norm that writes FP8 activations (past GEMV batches) gives the codes and scales of
// rms_norm then the quantize kernel, bit for bit; and rms_norm_linear_fp8 there equals the
// decomposition.
TEST_F(CudaFp8, NormQuantizeEqualsNormThenQuantize) {
  for (DType t : {DType::bf16, DType::f32, DType::f16})
    for (auto act : {Fp8ActScheme::dynamic_per_token, Fp8ActScheme::dynamic_group128, Fp8ActScheme::static_per_tensor})
      for (int64_t n : {1, 7, 64, 300})
        for (int64_t in : {4096, 200, 20480, 300}) {
          const Case c{act == Fp8ActScheme::dynamic_group128 ? Fp8WeightScheme::block128 : Fp8WeightScheme::per_channel,
                       act, n, in, 64, act == Fp8ActScheme::dynamic_per_token ? 3.f : 0.f};
          SCOPED_TRACE(std::string(short_name(t)) + " " + fp8_act_scheme_name(act) + " n " + std::to_string(n) + " in " +
                       std::to_string(in));
          Weights W;
          make_weights(c, W);
          const Tensor x = upload(make_x(c, t), t, {c.n, c.in});
          const Tensor g = upload(round_to(random_normal(size_t(c.in), rng), t), t, {c.in});
          const int64_t n_groups = act == Fp8ActScheme::dynamic_group128 ? (in + 127) / 128 : 1;
          std::vector<void*> cds;
          for (int i = 0; i < 2; ++i) {
            cds.push_back(gpu->alloc(size_t(n * in)));
            owned_.push_back(cds.back());
          }
          const Tensor want_codes(cds[0], DType::fp8_e4m3, Device::cuda, {n, in});
          const Tensor got_codes(cds[1], DType::fp8_e4m3, Device::cuda, {n, in});
          const Tensor want_scales = empty(DType::f32, {n_groups, n}), got_scales = empty(DType::f32, {n_groups, n});
          const Tensor normed = empty(t, {n, in});
          gpu->rms_norm(normed, x, g, 1e-6f);
          cuda::launch_fp8_quantize_act(want_codes, want_scales, normed, W.gpu, stream());
          cuda::launch_fp8_rms_norm_quantize(got_codes, got_scales, x, g, 1e-6f, W.gpu, stream());
          std::vector<uint8_t> want_c(size_t(n * in)), got_c(size_t(n * in));
          gpu->synchronize();
          gpu->copy_d2h(want_c.data(), cds[0], want_c.size());
          gpu->copy_d2h(got_c.data(), cds[1], got_c.size());
          EXPECT_EQ(got_c, want_c);
          EXPECT_EQ(download(got_scales), download(want_scales));
          if (in == 4096 && t != DType::f32 && n > cuda::kFp8GemvMaxRows) {
            const Tensor want = empty(t, {n, c.out}), got = empty(t, {n, c.out});
            gpu->linear_fp8(want, normed, W.gpu, Tensor(), false);
            gpu->rms_norm_linear_fp8(got, normed, x, g, 1e-6f, W.gpu, Tensor());
            EXPECT_EQ(download(got), download(want));
          }
        }
}

// The gated activation that also quantizes gives gated_act's act and the quantize kernel's
// codes and scales of it, bit for bit; and the MLP past GEMV batches (norm+gate_up+act, then
// the down projection taking the act's codes) equals its decomposition.
TEST_F(CudaFp8, GatedActQuantizeEqualsActThenQuantize) {
  for (DType t : {DType::bf16, DType::f16})
    for (auto act : {Fp8ActScheme::dynamic_per_token, Fp8ActScheme::dynamic_group128})
      for (Activation f : {Activation::silu, Activation::gelu_tanh})
        for (int64_t n : {5, 64, 300})
          for (int64_t inter : {1536, 200, 14336, 36}) {  // 36: not whole vectors (the scalar kernel)
            const int64_t hidden = 512;
            const Fp8WeightScheme ws = act == Fp8ActScheme::dynamic_group128 ? Fp8WeightScheme::block128
                                                                              : Fp8WeightScheme::per_channel;
            SCOPED_TRACE(std::string(short_name(t)) + " " + fp8_act_scheme_name(act) + " " + activation_name(f) + " n " +
                         std::to_string(n) + " inter " + std::to_string(inter));
            const Tensor gate_up = upload(round_to(random_normal(size_t(n * 2 * inter), rng, 3.f), t), t, {n, 2 * inter});
            const int64_t n_groups = act == Fp8ActScheme::dynamic_group128 ? (inter + 127) / 128 : 1;
            void* cd[2] = {gpu->alloc(size_t(n * inter)), gpu->alloc(size_t(n * inter))};
            owned_.push_back(cd[0]);
            owned_.push_back(cd[1]);
            const Tensor want_act = empty(t, {n, inter}), got_act = empty(t, {n, inter});
            const Tensor want_scales = empty(DType::f32, {n_groups, n}), got_scales = empty(DType::f32, {n_groups, n});
            Fp8Weight scheme;
            scheme.w_scheme = ws;
            scheme.act = act;
            scheme.act_amax_ub = act == Fp8ActScheme::dynamic_per_token ? 2.f : 0.f;
            gpu->gated_act(want_act, gate_up, f);
            cuda::launch_fp8_quantize_act(Tensor(cd[0], DType::fp8_e4m3, Device::cuda, {n, inter}), want_scales, want_act,
                                          scheme, stream());
            cuda::launch_fp8_gated_act_quantize(got_act, Tensor(cd[1], DType::fp8_e4m3, Device::cuda, {n, inter}),
                                                got_scales, gate_up, f, act, scheme.act_amax_ub, stream());
            std::vector<uint8_t> want_c(size_t(n * inter)), got_c(size_t(n * inter));
            gpu->synchronize();
            gpu->copy_d2h(want_c.data(), cd[0], want_c.size());
            gpu->copy_d2h(got_c.data(), cd[1], got_c.size());
            EXPECT_EQ(download(got_act), download(want_act));
            EXPECT_EQ(got_c, want_c);
            EXPECT_EQ(download(got_scales), download(want_scales));

            // The MLP through the backend: gate_up [2 inter, hidden], down [hidden, inter].
            Weights Wg, Wd;
            make_weights({ws, act, n, hidden, 2 * inter, 0.f, false, false, ws == Fp8WeightScheme::block128}, Wg);
            make_weights({ws, act, n, inter, hidden, 0.f, false, false, ws == Fp8WeightScheme::block128}, Wd);
            const Tensor x = upload(round_to(random_normal(size_t(n * hidden), rng), t), t, {n, hidden});
            const Tensor g = upload(round_to(random_normal(size_t(hidden), rng), t), t, {hidden});
            const Tensor normed = empty(t, {n, hidden}), gu = empty(t, {n, 2 * inter});
            const Tensor a1 = empty(t, {n, inter}), a2 = empty(t, {n, inter});
            const std::vector<float> h0 = round_to(random_normal(size_t(n * hidden), rng), t);
            const Tensor want_h = upload(h0, t, {n, hidden}), got_h = upload(h0, t, {n, hidden});
            gpu->rms_norm(normed, x, g, 1e-6f);
            gpu->linear_fp8(gu, normed, Wg.gpu, Tensor(), false);
            gpu->gated_act(a1, gu, f);
            gpu->linear_fp8(want_h, a1, Wd.gpu, Tensor(), true);
            gpu->rms_norm_gate_up_act_fp8(a2, gu, normed, x, g, 1e-6f, Wg.gpu, f);
            gpu->linear_fp8(got_h, a2, Wd.gpu, Tensor(), true);
            EXPECT_EQ(download(a2), download(a1));
            EXPECT_EQ(download(got_h), download(want_h));
        }
}

// A captured GEMV replays to the same result as its eager run (no allocation, no host work
// inside the capture), also with more row tiles than the persistent grid.
TEST_P(CudaFp8Gemv, GemvReplaysFromGraph) {
  const Case cases[] = {
      {Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 1, 1024, 300},
      {Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, 2, 256, 16 * tiles_past_grid(256 * 4 * 2) + 7},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("rows " + std::to_string(c.n) + " out " + std::to_string(c.out));
    Weights W;
    make_weights(c, W);
    const Tensor xd = upload(make_x(c, DType::bf16), DType::bf16, {c.n, c.in});
    const Tensor eager = empty(DType::bf16, {c.n, c.out}), replayed = empty(DType::bf16, {c.n, c.out});
    gpu->linear_fp8(eager, xd, W.gpu, Tensor(), false);
    gpu->begin_capture();
    gpu->linear_fp8(replayed, xd, W.gpu, Tensor(), false);
    std::unique_ptr<Graph> g = gpu->end_capture();
    gpu->replay(*g);
    gpu->synchronize();
    EXPECT_EQ(download(replayed), download(eager));
    // Again: a split K's tickets are back to zero after each launch.
    poison(replayed);
    gpu->replay(*g);
    gpu->synchronize();
    EXPECT_EQ(download(replayed), download(eager));
  }
}

// Exactly representable sums: small integer activations (static input scale 1, so the codes are
// the integers) and weights in {-2, ..., 2} (scale 1 / 4 and 1): every 128-k partial sum and every
// total is a small integer, exact in any accumulator, so both loops equal the CPU bit for bit
// (f32 out), whatever their order: rows 1..4, K a multiple of 128, K = 400 (a partial group and
// vectors past the last whole 64) and K = 48 (below one step).
TEST_P(CudaFp8Gemv, GemvExactOnIntegers) {
  const uint8_t int_codes[] = {0xc0, 0xb8, 0x00, 0x38, 0x40};  // E4M3 -2, -1, 0, 1, 2
  for (int64_t in : {int64_t(1024), int64_t(400), int64_t(48)})
    for (int64_t n = 1; n <= cuda::kFp8GemvMaxRows; ++n)
      for (Fp8WeightScheme ws : {Fp8WeightScheme::per_tensor, Fp8WeightScheme::per_channel}) {
        const int64_t out = 77;
        SCOPED_TRACE("K " + std::to_string(in) + " rows " + std::to_string(n) + " " + fp8_weight_scheme_name(ws));
        Weights W;
        make_weights({ws, Fp8ActScheme::static_per_tensor, n, in, out}, W);
        std::uniform_int_distribution<int> pick(0, 4), xi(-3, 3);
        for (auto& b : W.codes) b = int_codes[pick(rng)];
        for (size_t i = 0; i < W.scales.size(); ++i) W.scales[i] = i % 2 ? 0.25f : 1.f;
        W.input_scale = 1.f;
        gpu->copy_h2d(W.gpu.w.data, W.codes.data(), W.codes.size());
        gpu->copy_h2d(W.gpu.w_scale.data, W.scales.data(), W.scales.size() * 4);
        gpu->copy_h2d(W.gpu.input_scale.data, &W.input_scale, 4);
        gpu->synchronize();
        std::vector<float> x(size_t(n * in));
        for (auto& v : x) v = float(xi(rng));
        std::vector<float> ref(size_t(n * out), 0.f), xc = x;
        cpu.linear_fp8(host_view(ref, {n, out}), host_view(xc, {n, in}), W.cpu, Tensor(), false);
        const Tensor od = empty(DType::f32, {n, out});
        gemv(od, upload(x, DType::f32, {n, in}), W.gpu, Tensor(), false);
        EXPECT_EQ(download(od), ref);
      }
}

// The mma variants: each split (2 and 4 at every K the tests use with at least that many 128-wide
// groups; auto picks 2 or 4 where the tiles are fewer than two a resident block), each unroll,
// both reloads.
INSTANTIATE_TEST_SUITE_P(Kernels, CudaFp8Gemv,
                         ::testing::Values("fma", "mma", "mma_ksplit2", "mma_ksplit4_unroll2", "mma_ksplitauto_unroll8",
                                           "mma_unroll2_rolling", "mma_rolling", "mma_ksplit2_unroll4_rolling",
                                           "mma_prefetch64"),
                         [](const ::testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

}  // namespace
}  // namespace seam::test
