// Backend::linear_fp8_accumulate_before_norm on CUDA (SEAM_FP8_NORM_EPILOGUE=1: the product's scale
// epilogue, the residual add, the next RMSNorm and its FP8 quantization in one kernel on cuBLASLt's
// sums, fp8_scale_norm_quantize.h) against the same ops on a backend with the switch off (linear_fp8
// with accumulate, then the norm fusion norms the residual itself): the residual and every later
// output bit for bit, alone and along a whole FP8 layer (o_proj -> the MLP's norm fusion, which leaves
// act unwritten for down -> down, whose input codes are the gated producer's -> the next layer's qkv
// norm fusion). That the fused backend really handed the norm's codes over (and that the consumer
// checks what it takes) is shown by changing the residual between the two ops: the handed-over codes
// are then stale, so the outputs must differ from the switch-off backend's where the fusion applies.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>

#include "fp8_test_fixture.h"

namespace seam::test {
namespace {

class CudaFp8NormEpilogue : public CudaFp8 {
 protected:
  void SetUp() override {
    CudaFp8::SetUp();
    if (!gpu) return;  // skipped: no GPU
    setenv("SEAM_FP8_NORM_EPILOGUE", "0", 1);
    plain = make_cuda_backend(0);
    setenv("SEAM_FP8_NORM_EPILOGUE", "1", 1);
    fused = make_cuda_backend(0);
    unsetenv("SEAM_FP8_NORM_EPILOGUE");
  }
  void TearDown() override {
    for (Backend* b : {plain.get(), fused.get()})
      if (b) b->synchronize();
    CudaFp8::TearDown();
  }
  // A copy of `src` (contiguous) in fresh device memory.
  Tensor clone(const Tensor& src) {
    Tensor t = empty(src.dtype, {src.size(0), src.size(1)});
    write(t, download(src));
    return t;
  }
  // Whether the fused route can apply to a product of n rows of w here: past the GEMV rows, with an
  // unscaled cuBLASLt algorithm for it on this GPU.
  bool fused_route(int64_t n, const Fp8Weight& w, DType out) {
    return n > cuda::kFp8GemvMaxRows && probe.has_algorithm(cuda::Fp8CublasLt::Route::unscaled, n, w, out);
  }
  std::unique_ptr<Backend> plain, fused;
  cuda::Fp8CublasLt probe;
};

// One product before one norm fusion (rms_norm_linear_fp8), per dtype, row count (the GEMV's rows,
// a decode batch, a prefill chunk), width (at most 1, 2 and 3 chunks a thread; 2,064 and 5,120 leave
// some threads a chunk short), bias, and the next linear's activation scheme (per-token, static).
TEST_F(CudaFp8NormEpilogue, ProductThenNormEqualsDecomposition) {
  int n_fused = 0;
  for (DType t : {DType::bf16, DType::f16})
    for (int64_t n : {3, 64, 300})
      for (int64_t hidden : {512, 2064, 5120})
        for (bool bias : {false, true})
          for (auto next_act : {Fp8ActScheme::dynamic_per_token, Fp8ActScheme::static_per_tensor}) {
            const int64_t in = 256, out_next = 384;
            SCOPED_TRACE(std::string(short_name(t)) + " n " + std::to_string(n) + " hidden " + std::to_string(hidden) +
                         (bias ? " bias" : "") + " next " + fp8_act_scheme_name(next_act));
            Weights W, Wn;
            make_weights({Fp8WeightScheme::per_channel, Fp8ActScheme::dynamic_per_token, n, in, hidden}, W);
            make_weights({Fp8WeightScheme::per_channel, next_act, n, hidden, out_next, 2.f}, Wn);
            const Tensor x = upload(round_to(random_normal(size_t(n * in), rng), t), t, {n, in});
            const Tensor res0 = upload(round_to(random_normal(size_t(n * hidden), rng, 3.f), t), t, {n, hidden});
            const Tensor g = upload(round_to(random_normal(size_t(hidden), rng, 0.5f), t), t, {hidden});
            const Tensor b = bias ? upload(round_to(random_normal(size_t(hidden), rng), t), t, {hidden}) : Tensor();
            const float eps = 1e-5f;
            Tensor res[2] = {clone(res0), clone(res0)}, out[2], normed[2];
            Backend* backends[2] = {plain.get(), fused.get()};
            for (int k = 0; k < 2; ++k) {
              out[k] = empty(t, {n, out_next});
              normed[k] = empty(t, {n, hidden});
              backends[k]->linear_fp8_accumulate_before_norm(res[k], x, W.gpu, b, g, eps, Wn.gpu);
              backends[k]->rms_norm_linear_fp8(out[k], normed[k], res[k], g, eps, Wn.gpu, Tensor());
              backends[k]->synchronize();
            }
            EXPECT_EQ(download(res[1]), download(res[0]));
            EXPECT_EQ(download(out[1]), download(out[0]));

            // The residual changed between the ops: the switch-off backend norms the new values, the
            // fused one used the codes of the old ones where it made them.
            const bool applies = fused_route(n, W.gpu, t);
            n_fused += applies;
            // (Not a scaling: RMSNorm would undo it.)
            const std::vector<float> other = round_to(random_normal(size_t(n * hidden), rng, 3.f), t);
            for (int k = 0; k < 2; ++k) {
              write(res[k], download(res0));
              backends[k]->linear_fp8_accumulate_before_norm(res[k], x, W.gpu, b, g, eps, Wn.gpu);
              backends[k]->synchronize();
              write(res[k], other);
              backends[k]->rms_norm_linear_fp8(out[k], normed[k], res[k], g, eps, Wn.gpu, Tensor());
              backends[k]->synchronize();
            }
            if (applies)
              EXPECT_NE(download(out[1]), download(out[0])) << "the fused backend did not hand the norm's codes over";
            else
              EXPECT_EQ(download(out[1]), download(out[0]));

            // Another FP8 op in between drops the record: the norm fusion then norms residual itself.
            const Tensor spare = empty(t, {n, hidden});
            for (int k = 0; k < 2; ++k) {
              write(res[k], download(res0));
              backends[k]->linear_fp8_accumulate_before_norm(res[k], x, W.gpu, b, g, eps, Wn.gpu);
              backends[k]->synchronize();
              write(res[k], other);
              write(spare, download(res0));
              backends[k]->linear_fp8(spare, x, W.gpu, Tensor(), true);
              backends[k]->rms_norm_linear_fp8(out[k], normed[k], res[k], g, eps, Wn.gpu, Tensor());
              backends[k]->synchronize();
            }
            EXPECT_EQ(download(out[1]), download(out[0]));
          }
  EXPECT_GT(n_fused, 0) << "the fused route applied to no case on this GPU";
}

// A whole FP8 layer's residual chain, as LlamaModel::post_attention runs it: o_proj before the MLP's
// norm fusion (rms_norm_gate_up_act_fp8, told down comes next: act left unwritten where it can),
// down (its input codes the gated producer's) before the next layer's qkv norm fusion
// (rms_norm_qkv_rope_store_fp8's decomposition here: rms_norm_linear_fp8 into qkv).
TEST_F(CudaFp8NormEpilogue, LayerChainEqualsDecomposition) {
  for (DType t : {DType::bf16, DType::f16})
    for (int64_t n : {2, 64, 200}) {
      const int64_t hidden = 1024, q_size = 512, inter = 1536, qkv_out = 768;
      SCOPED_TRACE(std::string(short_name(t)) + " n " + std::to_string(n));
      Weights Wo, Wgu, Wd, Wqkv;
      const auto pc = Fp8WeightScheme::per_channel;
      const auto pt = Fp8ActScheme::dynamic_per_token;
      make_weights({pc, pt, n, q_size, hidden}, Wo);
      make_weights({pc, pt, n, hidden, 2 * inter}, Wgu);
      make_weights({pc, pt, n, inter, hidden}, Wd);
      make_weights({pc, pt, n, hidden, qkv_out}, Wqkv);
      // Random E4M3 codes reach 448: smaller MLP scales keep f16's act and residual finite (compared
      // below), as a real model's are.
      for (Weights* w : {&Wgu, &Wd}) {
        for (float& v : w->scales) v /= 16.f;
        w->gpu.w_scale = upload(w->scales, DType::f32, {int64_t(w->scales.size())});
      }
      const Tensor attn = upload(round_to(random_normal(size_t(n * q_size), rng), t), t, {n, q_size});
      const Tensor res0 = upload(round_to(random_normal(size_t(n * hidden), rng, 3.f), t), t, {n, hidden});
      const Tensor g_post = upload(round_to(random_normal(size_t(hidden), rng, 0.5f), t), t, {hidden});
      const Tensor g_in = upload(round_to(random_normal(size_t(hidden), rng, 0.5f), t), t, {hidden});
      const float eps = 1e-6f;
      Tensor res[2], qkv[2];
      Backend* backends[2] = {plain.get(), fused.get()};
      for (int k = 0; k < 2; ++k) {
        res[k] = clone(res0);
        qkv[k] = empty(t, {n, qkv_out});
        const Tensor act = empty(t, {n, inter}), gate_up = empty(t, {n, 2 * inter}), normed = empty(t, {n, hidden});
        Backend& b = *backends[k];
        b.linear_fp8_accumulate_before_norm(res[k], attn, Wo.gpu, Tensor(), g_post, eps, Wgu.gpu);
        b.rms_norm_gate_up_act_fp8(act, gate_up, normed, res[k], g_post, eps, Wgu.gpu, Activation::silu, &Wd.gpu);
        b.linear_fp8_accumulate_before_norm(res[k], act, Wd.gpu, Tensor(), g_in, eps, Wqkv.gpu);
        b.rms_norm_linear_fp8(qkv[k], normed, res[k], g_in, eps, Wqkv.gpu, Tensor());
        b.synchronize();
      }
      const std::vector<float> want_res = download(res[0]), want_qkv = download(qkv[0]);
      EXPECT_TRUE(std::all_of(want_res.begin(), want_res.end(), [](float v) { return std::isfinite(v); }));
      EXPECT_TRUE(std::all_of(want_qkv.begin(), want_qkv.end(), [](float v) { return std::isfinite(v); }));
      EXPECT_EQ(download(res[1]), want_res);
      EXPECT_EQ(download(qkv[1]), want_qkv);
    }
}

}  // namespace
}  // namespace seam::test
