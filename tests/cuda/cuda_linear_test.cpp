// linear (cuBLASLt and the batch-1 GEMV), and its fused forms, against the CPU reference: f32 (COMPUTE_32F, no TF32: ~1e-5), bf16/f16
// with fp32 accumulation, optional bias, strided x rows, f32 logits out of bf16/f16 inputs.
#include "backend/cuda/gemv.h"
#include "cuda_test_util.h"

namespace seam::test {
namespace {

class CudaLinear : public CudaTest {
 protected:
  // Runs out = x @ w^T (+ bias) on both backends; x is a strided view when `strided`.
  void check(DType t, DType out_t, int64_t n, int64_t in, int64_t n_out, bool with_bias, bool strided) {
    SCOPED_TRACE(std::string(short_name(t)) + "->" + short_name(out_t) + " n " + std::to_string(n) + " in " +
                 std::to_string(in) + " out " + std::to_string(n_out) + (with_bias ? " bias" : "") +
                 (strided ? " strided" : ""));
    const int64_t wide = strided ? in + 8 : in;
    auto x_h = round_to(random_normal(size_t(n * wide), rng), t);
    auto w_h = round_to(random_normal(size_t(n_out * in), rng, 1.f / std::sqrt(float(in))), t);
    auto b_h = round_to(random_normal(size_t(n_out), rng), t);
    Tensor x_buf = upload(x_h, t, {n, wide});
    Tensor x = strided ? x_buf.slice_cols(8, in) : x_buf;
    Tensor w = upload(w_h, t, {n_out, in});
    Tensor bias = with_bias ? upload(b_h, t, {n_out}) : Tensor{};
    Tensor out = empty(out_t, {n, n_out});
    gpu->fill(out, NAN);  // an output the kernel skips stays NaN and fails
    gpu->linear(out, x, w, bias);
    std::vector<float> ref(static_cast<size_t>(n * n_out));
    Tensor xr = host_view(x_h, {n, wide});
    cpu.linear(host_view(ref, {n, n_out}), strided ? xr.slice_cols(8, in) : xr, host_view(w_h, {n_out, in}),
               with_bias ? host_view(b_h, {n_out}) : Tensor{});
    // fp32 out of bf16/f16 inputs carries no output rounding: only accumulation order.
    const Tolerance tol = out_t == DType::f32 ? Tolerance{1e-4, 1e-5} : tolerance_for(t);
    expect_close(download(out), round_to(ref, out_t), t == DType::f32 ? Tolerance{1e-5, 1e-5} : tol, "linear");
  }
};

TEST_F(CudaLinear, MatchesCpuOverShapesAndDtypes) {
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    check(t, t, 1, 64, 48, false, false);
    check(t, t, 7, 40, 24, true, false);
    check(t, t, 33, 256, 384, true, true);
    check(t, t, 130, 512, 136, false, true);
    check(t, t, 5, 4096, 96, true, false);
  }
}

TEST_F(CudaLinear, OddSizesFallBackToUnalignedKernels) {
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    check(t, t, 3, 37, 13, true, false);
    check(t, t, 1, 9, 5, false, false);
  }
}

TEST_F(CudaLinear, LogitsInF32FromLowPrecisionInputs) {
  for (DType t : {DType::f16, DType::bf16}) {
    check(t, DType::f32, 4, 256, 1000, false, false);
    check(t, DType::f32, 2, 128, 72, true, true);  // bias in the weights' dtype: separate kernel
  }
}

// Batches of 1..kGemvMaxRows rows in f16/bf16 take the weight-streaming GEMV kernel
// (gemv.cu); shapes cover one partial unrolled sweep (in 40), several full ones (4096), K split
// into 1, 2, 4 and 8 slices (a small n_out with in 1024 / 2048 / 4096 / 8192: a slice keeps at
// least one full sweep, gemv.cu's slices_for), widths that
// are not a multiple of the block's rows (n_out 13, 1000), bias and f32 logits.
TEST_F(CudaLinear, DecodeBatchesThroughTheGemvMatchCpu) {
  for (DType t : {DType::f16, DType::bf16}) {
    for (int64_t n = 1; n <= cuda::kGemvMaxRows; ++n) {
      check(t, t, n, 40, 13, n % 2 == 1, n == 2);
      check(t, t, n, 4096, 96, n % 2 == 0, false);
      check(t, t, n, 896, 1000, true, n == 1);
      for (int64_t in : {256, 1024, 2048, 4096, 8192}) check(t, t, n, in, 100, n == 1, false);
    }
    check(t, DType::f32, 1, 2048, 1000, false, false);
    check(t, DType::f32, 3, 128, 72, true, true);
    // Projections of >= 16 MiB with n_in >= 2048 stream two rows a warp (gemv_pairs_plain_rows):
    // rows j and n_out / 2 + j, with bias and f32 out; an odd n_out keeps one row a warp.
    check(t, t, 1, 2048, 4096, true, false);
    check(t, t, 1, 4096, 2048, false, true);
    check(t, DType::f32, 1, 2048, 4098, true, false);
    check(t, t, 1, 2048, 4097, true, false);
  }
}

TEST_F(CudaLinear, GemvAppliesOnlyWhereItIsExact) {
  const int64_t in = 64, n_out = 32;
  Tensor w = empty(DType::bf16, {n_out, in}), w16 = empty(DType::f16, {n_out, in});
  const int64_t m = cuda::kGemvMaxRows;
  Tensor x8 = empty(DType::bf16, {m, in}), x9 = empty(DType::bf16, {m + 1, in + 8});
  Tensor o8 = empty(DType::bf16, {m, n_out}), o9 = empty(DType::bf16, {m + 1, n_out});
  Tensor o8f = empty(DType::f32, {m, n_out});
  EXPECT_TRUE(cuda::gemv_applies(o8, x8, w, Tensor{}));
  EXPECT_TRUE(cuda::gemv_applies(o8f, x8, w, Tensor{}));
  EXPECT_FALSE(cuda::gemv_applies(o9, x9.slice_cols(0, in), w, Tensor{}));        // too many rows: cuBLASLt
  EXPECT_FALSE(cuda::gemv_applies(o8, x8, w16, Tensor{}));                         // mixed dtypes
  EXPECT_FALSE(cuda::gemv_applies(o8, x9.rows(m).slice_cols(1, in), w, Tensor{}));  // unaligned rows
  Tensor xf = empty(DType::f32, {m, in}), wf = empty(DType::f32, {n_out, in}), of = empty(DType::f32, {m, n_out});
  EXPECT_FALSE(cuda::gemv_applies(of, xf, wf, Tensor{}));  // float32 stays on cuBLASLt (no TF32)
}

// The fused forms the model uses: out += x @ w^T (+ bias) into a random residual, and
// rms_norm(x) * g @ w^T (+ bias). One row in f16/bf16 takes the GEMV with the fusion inside
// (shapes cover K split into 1..8 slices: in 1024 / 2048 / 4096 / 8192; their sums of squares
// must combine); more rows, and f32, take cuBLASLt (beta = 1) or the norm kernel then cuBLASLt.
TEST_F(CudaLinear, FusedResidualAddAndNormMatchCpu) {
  struct Case {
    int64_t n, in, n_out;
    bool bias;
  };
  // {1, 2048, 4096}: 16 MiB of bf16 / f16, so the product streams two rows a warp
  // (gemv_pairs_plain_rows); its residual add and norm must apply to both rows.
  const Case cases[] = {{1, 4096, 96, false}, {1, 896, 1000, true}, {1, 256, 100, false}, {1, 512, 100, true},
                        {1, 1024, 100, false}, {1, 2048, 100, false}, {1, 8192, 100, true}, {1, 40, 13, true},
                        {1, 2048, 4096, true}, {5, 256, 96, true},    {33, 512, 136, false}};
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(short_name(t)) + " n " + std::to_string(c.n) + " in " + std::to_string(c.in) +
                   " out " + std::to_string(c.n_out));
      const int64_t n = c.n, in = c.in, n_out = c.n_out;
      auto x_h = round_to(random_normal(size_t(n * in), rng, 3.f), t);  // not unit scale: the norm must act
      auto g_h = round_to(random_normal(size_t(in), rng), t);
      auto w_h = round_to(random_normal(size_t(n_out * in), rng, 1.f / std::sqrt(float(in))), t);
      auto b_h = round_to(random_normal(size_t(n_out), rng), t);
      auto res_h = round_to(random_normal(size_t(n * n_out), rng), t);
      Tensor x = upload(x_h, t, {n, in}), g = upload(g_h, t, {in}), w = upload(w_h, t, {n_out, in});
      Tensor bias = c.bias ? upload(b_h, t, {n_out}) : Tensor{};
      Tensor host_bias = c.bias ? host_view(b_h, {n_out}) : Tensor{};

      Tensor res = upload(res_h, t, {n, n_out});
      gpu->linear_accumulate(res, x, w, bias);
      auto res_ref = res_h;
      cpu.linear_accumulate(host_view(res_ref, {n, n_out}), host_view(x_h, {n, in}), host_view(w_h, {n_out, in}),
                            host_bias);
      expect_close(download(res), round_to(res_ref, t), tolerance_for(t), "linear_accumulate");

      Tensor out = empty(t, {n, n_out}), normed = empty(t, {n, in});
      gpu->fill(out, NAN);
      gpu->rms_norm_linear(out, normed, x, g, 1e-5f, w, bias);
      std::vector<float> ref(size_t(n * n_out)), normed_ref(size_t(n * in));
      cpu.rms_norm_linear(host_view(ref, {n, n_out}), host_view(normed_ref, {n, in}), host_view(x_h, {n, in}),
                          host_view(g_h, {in}), 1e-5f, host_view(w_h, {n_out, in}), host_bias);
      expect_close(download(out), round_to(ref, t), tolerance_for(t), "rms_norm_linear");

      // The same x, g and w as [gate | up] of an MLP with n_out / 2 features (n_out even).
      if (n_out % 2 != 0) continue;
      const int64_t inter = n_out / 2;
      Tensor act = empty(t, {n, inter}), gate_up = empty(t, {n, n_out});
      gpu->fill(act, NAN);
      gpu->rms_norm_gate_up_silu(act, gate_up, normed, x, g, 1e-5f, w);
      std::vector<float> act_ref(size_t(n * inter)), gate_up_ref(size_t(n * n_out));
      cpu.rms_norm_gate_up_silu(host_view(act_ref, {n, inter}), host_view(gate_up_ref, {n, n_out}),
                                host_view(normed_ref, {n, in}), host_view(x_h, {n, in}), host_view(g_h, {in}), 1e-5f,
                                host_view(w_h, {n_out, in}));
      expect_close(download(act), round_to(act_ref, t), tolerance_for(t), "rms_norm_gate_up_silu");
    }
  }
}

TEST_F(CudaLinear, RepeatedShapesReuseThePlanAndStayCorrect) {
  // Two biases of one shape share a cached plan: each call must use its own bias.
  const int64_t n = 4, in = 64, n_out = 32;
  auto x_h = random_normal(size_t(n * in), rng);
  auto w_h = random_normal(size_t(n_out * in), rng);
  auto b1 = random_normal(size_t(n_out), rng), b2 = random_normal(size_t(n_out), rng);
  Tensor x = upload(x_h, DType::f32, {n, in}), w = upload(w_h, DType::f32, {n_out, in});
  Tensor bd1 = upload(b1, DType::f32, {n_out}), bd2 = upload(b2, DType::f32, {n_out});
  Tensor o1 = empty(DType::f32, {n, n_out}), o2 = empty(DType::f32, {n, n_out});
  gpu->linear(o1, x, w, bd1);
  gpu->linear(o2, x, w, bd2);
  std::vector<float> r1(static_cast<size_t>(n * n_out)), r2 = r1;
  cpu.linear(host_view(r1, {n, n_out}), host_view(x_h, {n, in}), host_view(w_h, {n_out, in}), host_view(b1, {n_out}));
  cpu.linear(host_view(r2, {n, n_out}), host_view(x_h, {n, in}), host_view(w_h, {n_out, in}), host_view(b2, {n_out}));
  expect_close(download(o1), r1, {1e-5, 1e-5}, "bias 1");
  expect_close(download(o2), r2, {1e-5, 1e-5}, "bias 2");
}

}  // namespace
}  // namespace seam::test
