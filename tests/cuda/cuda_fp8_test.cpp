// The CUDA FP8 linear against the CPU reference (backend.h "FP8 linear"): the activation
// quantization bit for bit (codes and scales), and the whole op per weight scheme, activation
// scheme and activation dtype, with bias and accumulate, strided rows, an all-zero row and a
// saturating outlier.
#include <cuda_runtime.h>

#include "backend/cpu/fp8_cpu.h"
#include "backend/cuda/fp8_quantize.h"
#include "core/fp8.h"
#include "cuda_test_util.h"

namespace seam::test {
namespace {

struct Case {
  Fp8WeightScheme w;
  Fp8ActScheme act;
  int64_t n, in, out;
  float ub = 0.f;
  bool bias = false, accumulate = false;
};

class CudaFp8 : public CudaTest {
 protected:
  // An FP8 weight on both backends: random finite codes and positive scales.
  struct Weights {
    std::vector<uint8_t> codes;
    std::vector<float> scales;
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
  void TearDown() override {
    if (gpu) {
      gpu->synchronize();
      for (void* p : owned_) gpu->release(p);
    }
    CudaTest::TearDown();
  }
  std::vector<void*> owned_;
};

TEST_F(CudaFp8, QuantizeIsBitExact) {
  for (DType t : {DType::f32, DType::bf16, DType::f16})
    for (auto act : {Fp8ActScheme::dynamic_per_token, Fp8ActScheme::dynamic_group128, Fp8ActScheme::static_per_tensor})
      for (float ub : {0.f, 3.f}) {
        const Case c{act == Fp8ActScheme::dynamic_group128 ? Fp8WeightScheme::block128 : Fp8WeightScheme::per_channel,
                     act, 5, 300, 8, ub};
        SCOPED_TRACE(std::string(short_name(t)) + " " + fp8_act_scheme_name(act) + " ub " + std::to_string(ub));
        Weights W;
        make_weights(c, W);
        const std::vector<float> x = make_x(c, t);
        const int64_t n_groups = act == Fp8ActScheme::dynamic_group128 ? 3 : 1;
        std::vector<uint8_t> want_codes(size_t(c.n * c.in));
        std::vector<float> want_scales(size_t(c.n * n_groups));
        for (int64_t i = 0; i < c.n; ++i)
          fp8_cpu::quantize_row(x.data() + i * c.in, c.in, W.cpu, want_codes.data() + i * c.in,
                                want_scales.data() + i * n_groups);
        void* cd = gpu->alloc(want_codes.size());
        owned_.push_back(cd);
        const Tensor codes(cd, DType::fp8_e4m3, Device::cuda, {c.n, c.in});
        const Tensor scales = empty(DType::f32, {c.n, n_groups});
        const Tensor xd = upload(x, t, {c.n, c.in});
        cuda::launch_fp8_quantize_act(codes, scales, xd, W.gpu, static_cast<cudaStream_t>(cuda_backend_stream(*gpu)));
        std::vector<uint8_t> got_codes(want_codes.size());
        gpu->copy_d2h(got_codes.data(), cd, got_codes.size());
        const std::vector<float> got_scales = download(scales);
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
  for (DType t : {DType::f32, DType::bf16, DType::f16})
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(short_name(t)) + " " + fp8_weight_scheme_name(c.w) + " / " + fp8_act_scheme_name(c.act) +
                   " n " + std::to_string(c.n) + " in " + std::to_string(c.in) + " out " + std::to_string(c.out));
      Weights W;
      make_weights(c, W);
      const std::vector<float> x = make_x(c, t);
      std::vector<float> bias = round_to(random_normal(size_t(c.out), rng), t);
      std::vector<float> out0 = round_to(random_normal(size_t(c.n * c.out), rng), t);
      // CPU reference on the same (rounded) values.
      std::vector<float> xc = x, bc = bias, oc = out0;
      cpu.linear_fp8(host_view(oc, {c.n, c.out}), host_view(xc, {c.n, c.in}), W.cpu,
                     c.bias ? host_view(bc, {c.out}) : Tensor(), c.accumulate);
      // GPU: x as a strided view (every other row of a [2n, in] buffer).
      std::vector<float> xs(size_t(2 * c.n * c.in), 0.f);
      for (int64_t i = 0; i < c.n; ++i)
        std::copy(x.begin() + i * c.in, x.begin() + (i + 1) * c.in, xs.begin() + 2 * i * c.in);
      Tensor xd = upload(xs, t, {c.n, 2 * c.in}).slice_cols(0, c.in);
      Tensor od = upload(out0, t, {c.n, c.out});
      Tensor bd = c.bias ? upload(bias, t, {c.out}) : Tensor();
      gpu->linear_fp8(od, xd, W.gpu, bd, c.accumulate);
      // f32: summation order only (cuBLASLt's FP8 accumulation is promoted to float32 in steps, so
      // its error is a few float32 roundings of the partial sums); f16/bf16: one rounding of the
      // output (and of out0/bias, which both sides share).
      expect_close(download(od), oc, tolerance_for(t, {1e-4, 1e-5}), "linear_fp8");
    }
}

}  // namespace
}  // namespace seam::test
