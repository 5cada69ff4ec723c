// The CUDA FP8 linear against the CPU reference (backend.h "FP8 linear"): the activation
// quantization bit for bit (codes and scales), and the whole op per weight scheme, activation
// scheme and activation dtype, with bias and accumulate, strided rows, an all-zero row and a
// saturating outlier; cuBLASLt per scale mode over rows 1, 2, 7, 16, 64, 300; the fused
// activation producers. The batch-1..4 GEMV alone: cuda_fp8_gemv_test.cpp.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>

#include "backend/cuda/fp8_scaled_gated_act_quantize.h"
#include "fp8_test_fixture.h"

namespace seam::test {
namespace {

// Widths: 300 (not whole 8-element vectors: the scalar kernel), 200 (vectors, a partial
// 128-group), 4096, 20480 (16 vectors a thread: the register path's largest).
TEST_F(CudaFp8, QuantizeIsBitExact) {
  for (DType t : {DType::f32, DType::bf16, DType::f16})
    for (auto act : {Fp8ActScheme::dynamic_per_token, Fp8ActScheme::dynamic_group128, Fp8ActScheme::static_per_tensor})
      for (float ub : {0.f, 3.f})
        for (int64_t in : {300, 200, 4096, 20480}) {
          const Case c{act == Fp8ActScheme::dynamic_group128 ? Fp8WeightScheme::block128 : Fp8WeightScheme::per_channel,
                       act,
                       5,
                       in,
                       8,
                       ub};
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
  // Past the GEMV's rows (SEAM_FP8_GEMM's default route, ws-lt): per-channel weights run cuBLASLt's
  // unscaled tensor-core GEMM (K a multiple of 16; fast accumulation, the same bound); what cuBLASLt
  // refuses (128-block weights, and
  // per-tensor ones, which only tests make: the loader widens them to per-channel) runs the wgmma
  // GEMM where it applies (fp8_gemm_wgmma.h: sm_90a, K % 128 == 0, N % 8 == 0; past 64 rows the
  // warp-specialised one): the tensor-core bound. The rest run the CUDA-core kernel and hold the
  // exact bound.
  for (DType t : {DType::f32, DType::bf16, DType::f16})
    for (const Case& c : cases) {
      Fp8Weight shape_only;  // the route depends on shapes, alignment and the GPU only
      shape_only.w = empty(DType::fp8_e4m3, {c.out, c.in});
      shape_only.w_scheme = c.w;
      const bool wgmma =
          cuda::fp8_gemm_wgmma_applies(empty(t, {c.n, c.out}), empty(DType::fp8_e4m3, {c.n, c.in}), shape_only);
      // GEMV rows (K % 16 == 0): SEAM_FP8_GEMV's default on E4M3 tensor cores is the mma loop.
      const bool gemv_mma = c.n <= cuda::kFp8GemvMaxRows && c.in % 16 == 0 && e4m3_tensor_cores();
      const bool tensor_cores = gemv_mma || (c.n > cuda::kFp8GemvMaxRows &&
                                             (wgmma || (c.w == Fp8WeightScheme::per_channel && c.in % 16 == 0)));
      check(c, t, {}, tensor_cores ? kTensorCoreF32 : kExactF32);
    }
}

// cuBLASLt alone, each route (fp8_cublaslt.h) at rows 1, 2, 7, 16, 64, 300 against the
// reference: the outer-vector and 128-block scale modes where this GPU's cuBLASLt has an
// algorithm for them (asked through has_algorithm; where it has none, run_route must refuse and
// enqueue nothing: the H200 has neither), and the unscaled product + scale epilogue, which every
// GPU with FP8 tensor cores (compute capability 8.9 and up) must run at rows that are multiples
// of 16 (other row counts where cuBLASLt offers it). Per-tensor weights it refuses. Every failure
// names the route. float32 outputs are held to the tensor-core bound (kTensorCoreF32), with
// cuBLASLt's promotion and with fast accumulation (K <= 1,024 here; cuda_fp8_gemm_wgmma_test holds
// both at K 4,096 and 14,336).
TEST_F(CudaFp8, CublasLtModesMatchCpu) {
  for (bool fast : {false, true}) {
    SCOPED_TRACE(fast ? "fast accumulation" : "promoted");
    using Route = cuda::Fp8CublasLt::Route;
    cuda::Fp8CublasLt lt(fast);
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
              EXPECT_FALSE(
                  lt.run_route(route, probe_out, empty(DType::fp8_e4m3, {n, c.in}),
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
}

// Through the backend at the batch sizes of decode and prefill, each path: rows 1, 2 (GEMV),
// 7 (cuBLASLt below 16), 16, 64, 300; block weights without compact scales and K % 16 != 0
// (the CUDA-core kernel).
TEST_F(CudaFp8, LinearRowsMatchCpu) {
  for (int64_t n : {1, 2, 7, 16, 64, 300}) {
    check({Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, n, 1024, 256, 0.f, true, true}, DType::bf16);
    check({Fp8WeightScheme::per_tensor, Fp8ActScheme::dynamic_per_token, n, 256, 64}, DType::bf16);
    check({Fp8WeightScheme::block128, Fp8ActScheme::dynamic_group128, n, 512, 256, 0.f, false, true, true},
          DType::bf16);
    check({Fp8WeightScheme::block128, Fp8ActScheme::dynamic_group128, n, 384, 96}, DType::bf16);
    check({Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, n, 200, 40}, DType::f16);
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
                       act,
                       n,
                       in,
                       64,
                       act == Fp8ActScheme::dynamic_per_token ? 3.f : 0.f};
          SCOPED_TRACE(std::string(short_name(t)) + " " + fp8_act_scheme_name(act) + " n " + std::to_string(n) +
                       " in " + std::to_string(in));
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
// The fused MLP runs through three backends: the default (SEAM_FP8_GATED_ROUTE=lt), one on
// SEAM_FP8_GATED_ROUTE=ws (the warp-specialised GEMM's gated epilogue past 64 rows), and one on lt
// with SEAM_FP8_GATED_EPILOGUE=0, so that only the lt route leaves [gate | up] unwritten:
// cuBLASLt's sums into fp8_scaled_gated_act_quantize, bit for bit the decomposition (act, and the
// down projection through act's codes) wherever it applies (per-channel weights, per-token
// activations, inter % 8 == 0 and <= 16,384, rows past the GEMV that cuBLASLt has an algorithm
// for), the decomposition elsewhere. A fourth backend, lt with SEAM_FP8_ACT_SKIP=1, is told the
// down projection comes next: where the lt route applies it must leave act unwritten (still the
// poison) and the down projection through act's codes must still equal the decomposition's.
TEST_F(CudaFp8, GatedActQuantizeEqualsActThenQuantize) {
  setenv("SEAM_FP8_GATED_ROUTE", "lt", 1);
  setenv("SEAM_FP8_GATED_EPILOGUE", "0", 1);
  setenv("SEAM_FP8_ACT_SKIP", "0", 1);  // act written: the default leaves it unwritten where it can
  std::unique_ptr<Backend> lt = make_cuda_backend(0);
  setenv("SEAM_FP8_ACT_SKIP", "1", 1);
  std::unique_ptr<Backend> lt_skip = make_cuda_backend(0);
  unsetenv("SEAM_FP8_ACT_SKIP");
  setenv("SEAM_FP8_GATED_ROUTE", "ws", 1);
  unsetenv("SEAM_FP8_GATED_EPILOGUE");
  std::unique_ptr<Backend> ws_route = make_cuda_backend(0);
  unsetenv("SEAM_FP8_GATED_ROUTE");
  cuda::Fp8CublasLt probe;
  int n_lt = 0;
  for (DType t : {DType::bf16, DType::f16})
    for (auto act : {Fp8ActScheme::dynamic_per_token, Fp8ActScheme::dynamic_group128})
      for (Activation f : {Activation::silu, Activation::gelu_tanh})
        for (int64_t n : {5, 64, 300})
          for (int64_t inter : {1536, 200, 14336, 24576, 36}) {
            // 1,536 / 200: 256 threads a row; 14,336: 1,024 threads at 2 chunks; 24,576: 512 at 8;
            // 36: not whole vectors (the scalar kernel)
            const int64_t hidden = 512;
            const Fp8WeightScheme ws =
                act == Fp8ActScheme::dynamic_group128 ? Fp8WeightScheme::block128 : Fp8WeightScheme::per_channel;
            SCOPED_TRACE(std::string(short_name(t)) + " " + fp8_act_scheme_name(act) + " " + activation_name(f) +
                         " n " + std::to_string(n) + " inter " + std::to_string(inter));
            const Tensor gate_up =
                upload(round_to(random_normal(size_t(n * 2 * inter), rng, 3.f), t), t, {n, 2 * inter});
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
            cuda::launch_fp8_quantize_act(Tensor(cd[0], DType::fp8_e4m3, Device::cuda, {n, inter}), want_scales,
                                          want_act, scheme, stream());
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
            EXPECT_EQ(download(a2), download(a1)) << "default route";
            EXPECT_EQ(download(got_h), download(want_h)) << "default route";
            const Tensor a4 = empty(t, {n, inter}), got_h4 = upload(h0, t, {n, hidden});
            gpu->synchronize();  // the uploads (fixture stream) before ws_route's stream reads them
            ws_route->rms_norm_gate_up_act_fp8(a4, gu, normed, x, g, 1e-6f, Wg.gpu, f);
            ws_route->linear_fp8(got_h4, a4, Wd.gpu, Tensor(), true);
            ws_route->synchronize();
            EXPECT_EQ(download(a4), download(a1)) << "SEAM_FP8_GATED_ROUTE=ws";
            EXPECT_EQ(download(got_h4), download(want_h)) << "SEAM_FP8_GATED_ROUTE=ws";

            const bool lt_applies = act == Fp8ActScheme::dynamic_per_token && n > cuda::kFp8GemvMaxRows &&
                                    inter % 8 == 0 && inter <= 16384 &&
                                    probe.has_algorithm(cuda::Fp8CublasLt::Route::unscaled, n, Wg.gpu, DType::f32);
            const Tensor gu3 = upload(std::vector<float>(size_t(n * 2 * inter), NAN), t, {n, 2 * inter});
            const Tensor normed3 = empty(t, {n, hidden}), a3 = empty(t, {n, inter});
            const Tensor got_h3 = upload(h0, t, {n, hidden});
            gpu->synchronize();  // the uploads (fixture stream) before lt's stream reads them
            lt->rms_norm_gate_up_act_fp8(a3, gu3, normed3, x, g, 1e-6f, Wg.gpu, f);
            lt->linear_fp8(got_h3, a3, Wd.gpu, Tensor(), true);
            lt->synchronize();
            EXPECT_EQ(download(a3), download(a1)) << (lt_applies ? "lt route" : "decomposition");
            EXPECT_EQ(download(got_h3), download(want_h)) << (lt_applies ? "lt route" : "decomposition");
            const std::vector<float> gu3_after = download(gu3);
            const bool untouched =
                std::all_of(gu3_after.begin(), gu3_after.end(), [](float v) { return std::isnan(v); });
            EXPECT_EQ(untouched, lt_applies) << "[gate | up] " << (untouched ? "unwritten" : "written")
                                             << ": the lt route " << (untouched ? "ran" : "did not run");
            n_lt += lt_applies;

            // Told the down projection: act skipped where the lt route applies, the product the same.
            const Tensor gu5 = empty(t, {n, 2 * inter}), normed5 = empty(t, {n, hidden}), a5 = empty(t, {n, inter});
            const Tensor got_h5 = upload(h0, t, {n, hidden});
            gpu->synchronize();
            lt_skip->rms_norm_gate_up_act_fp8(a5, gu5, normed5, x, g, 1e-6f, Wg.gpu, f, &Wd.gpu);
            lt_skip->linear_fp8(got_h5, a5, Wd.gpu, Tensor(), true);
            lt_skip->synchronize();
            EXPECT_EQ(download(got_h5), download(want_h)) << "SEAM_FP8_ACT_SKIP=1";
            const std::vector<float> a5_after = download(a5);
            const bool a5_unwritten =
                std::all_of(a5_after.begin(), a5_after.end(), [](float v) { return std::isnan(v); });
            EXPECT_EQ(a5_unwritten, lt_applies) << "act " << (a5_unwritten ? "unwritten" : "written");
            if (!lt_applies) EXPECT_EQ(a5_after, download(a1)) << "SEAM_FP8_ACT_SKIP=1, act written";
            // Breaking the contract (another linear_fp8 first) is an internal error, not garbage.
            if (lt_applies) {
              lt_skip->rms_norm_gate_up_act_fp8(a5, gu5, normed5, x, g, 1e-6f, Wg.gpu, f, &Wd.gpu);
              EXPECT_THROW(lt_skip->linear_fp8(gu5, x, Wg.gpu, Tensor(), false), Error);
              lt_skip->synchronize();
            }
          }
  EXPECT_GT(n_lt, 0) << "the lt route applied to no case";
}

// fp8_scaled_gated_act_quantize on clusters of 2 and 4 CTAs a row (SEAM_FP8_GATED_CLUSTER, the decode-batch
// layout) stores the one-CTA kernel's act, codes and scales bit for bit: rows from 1 to past the SMs' count
// (where the 256-thread layout takes over), widths whose rows fill 2 chunks of 1,024 threads to their last
// vector (16,384), part of it (14,336: Llama-3.1-8B) or only just need the 1,024-thread layout (4,104),
// per-channel and per-tensor weight scales, both activations, both 16-bit dtypes, with and without the
// amax clamp, and an outlier row (its amax in one CTA of the cluster only).
TEST_F(CudaFp8, ScaledGatedActQuantizeOnClustersEqualsOneBlock) {
  int n_cluster_cases = 0;
  for (DType t : {DType::bf16, DType::f16})
    for (Activation f : {Activation::silu, Activation::gelu_tanh})
      for (Fp8WeightScheme wsch : {Fp8WeightScheme::per_channel, Fp8WeightScheme::per_tensor})
        for (int64_t n : {1, 7, 64, 200})
          for (int64_t inter : {14336, 16384, 4104}) {
            const float ub = n == 7 ? 40.f : 0.f;
            SCOPED_TRACE(std::string(short_name(t)) + " " + activation_name(f) + " n " + std::to_string(n) + " inter " +
                         std::to_string(inter) + (wsch == Fp8WeightScheme::per_tensor ? " per-tensor" : " per-channel"));
            std::vector<float> sums_h = random_normal(size_t(n * 2 * inter), rng, 3000.f);
            if (n > 1) sums_h[size_t(2 * inter + inter - 3)] = 9.0e5f;  // row 1: an up outlier near its end
            const Tensor sums = upload(sums_h, DType::f32, {n, 2 * inter});
            const Tensor xs = upload(random_normal(size_t(n), rng, 0.05f), DType::f32, {n});
            void* wd = gpu->alloc(size_t(2 * inter * 16));
            owned_.push_back(wd);
            Fp8Weight w;
            w.w = Tensor(wd, DType::fp8_e4m3, Device::cuda, {2 * inter, 16});  // only its shape is read
            w.w_scheme = wsch;
            w.w_scale = wsch == Fp8WeightScheme::per_channel
                            ? upload(random_normal(size_t(2 * inter), rng, 0.01f), DType::f32, {2 * inter})
                            : upload({0.0123f}, DType::f32, {1});
            w.act = Fp8ActScheme::dynamic_per_token;
            struct Out {
              Tensor act, scales;
              void* codes;
            };
            auto run = [&](int cluster) {
              Out o{empty(t, {n, inter}), empty(DType::f32, {n}), gpu->alloc(size_t(n * inter))};
              owned_.push_back(o.codes);
              EXPECT_TRUE(cuda::fp8_scaled_gated_act_quantize_applies(o.act, w));
              cuda::launch_fp8_scaled_gated_act_quantize(o.act, static_cast<uint8_t*>(o.codes), o.scales.ptr<float>(),
                                                         sums.ptr<float>(), xs.ptr<float>(), w, f, ub, stream(), true,
                                                         cluster);
              return o;
            };
            std::vector<Out> outs;
            for (int cluster : {1, 2, 4}) outs.push_back(run(cluster));
            gpu->synchronize();
            auto codes_of = [&](const Out& o) {
              std::vector<uint8_t> c(size_t(n * inter));
              gpu->copy_d2h(c.data(), o.codes, c.size());
              return c;
            };
            const auto act1 = download(outs[0].act), sc1 = download(outs[0].scales);
            const auto codes1 = codes_of(outs[0]);
            for (size_t k = 1; k < outs.size(); ++k) {
              SCOPED_TRACE("cluster of " + std::to_string(k == 1 ? 2 : 4));
              EXPECT_EQ(download(outs[k].act), act1);
              EXPECT_EQ(download(outs[k].scales), sc1);
              EXPECT_EQ(codes_of(outs[k]), codes1);
              ++n_cluster_cases;
            }
            // Not vacuous: the rows were written (no poison left) and quantized (a nonzero code).
            for (float v : sc1) ASSERT_TRUE(std::isfinite(v) && v > 0.f);
            EXPECT_NE(std::count(codes1.begin(), codes1.end(), uint8_t(0)), std::ptrdiff_t(codes1.size()));
          }
  EXPECT_GT(n_cluster_cases, 0);
}

}  // namespace
}  // namespace seam::test
