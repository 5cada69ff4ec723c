// Both batch-1 GEMV kernels, named explicitly (GemvKernel::registers and ::bulk), against the
// CPU reference for every epilogue the decode step uses: plain (bias, f32 logits), residual
// add, RMSNorm in front, [gate | up] with SiLU * up, and qkv with RoPE and the KV store.
// Shapes are chosen for the bulk kernel's plan (gemv_bulk.cu): stages of 128 items (short
// rows) down to one item split over 4 warps (28 KB rows), partial last stages, and enough
// stages per block that the ring of 2-4 slots wraps several times. The rest of the GPU suite
// runs once more with SEAM_GEMV_BULK=2 (scripts/gpu_suite.sh) so every fused path of the
// models also runs on the bulk kernel.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/gemv.h"
#include "cuda_test_util.h"

namespace seam::test {
namespace {

using cuda::GemvKernel;

class CudaGemvKernels : public CudaTest {
 protected:
  cudaStream_t stream() { return static_cast<cudaStream_t>(cuda_backend_stream(*gpu)); }

  // Runs launch_gemv on `kernel` (which must apply) and returns nothing: callers download.
  void run(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias, const cuda::GemvFusion& f,
           GemvKernel kernel) {
    ASSERT_TRUE(cuda::gemv_fusion_applies(out, x, w, bias, f, kernel));
    cuda::launch_gemv(out, x, w, bias, f, stream(), kernel);
  }
};

const char* name_of(GemvKernel k) { return k == GemvKernel::bulk ? "bulk" : "registers"; }

// Plain, residual add and RMSNorm, over row lengths from 80 bytes to 28 KB.
TEST_F(CudaGemvKernels, PlainAccumulateAndNormMatchCpu) {
  struct Case {
    int64_t in, n_out;
    bool bias;
  };
  // in 40: 128 items a stage; 896: 16 (the 0.5B shapes); 2048: 8; 4096: 4; 8192: 2 items of 2
  // warps each; 14336: one item of 4 warps (Llama-3.1-8B's down_proj rows).
  const Case cases[] = {{40, 20000, true},  {896, 9000, false},  {2048, 3000, true},
                        {4096, 3000, false}, {8192, 1000, true}, {14336, 600, false}};
  for (GemvKernel kernel : {GemvKernel::registers, GemvKernel::bulk}) {
    for (DType t : {DType::bf16, DType::f16}) {
      for (const Case& c : cases) {
        SCOPED_TRACE(std::string(name_of(kernel)) + " " + short_name(t) + " in " + std::to_string(c.in) + " out " +
                     std::to_string(c.n_out));
        const int64_t in = c.in, n_out = c.n_out;
        auto x_h = round_to(random_normal(size_t(in), rng, 3.f), t);
        auto g_h = round_to(random_normal(size_t(in), rng), t);
        auto w_h = round_to(random_normal(size_t(n_out * in), rng, 1.f / std::sqrt(float(in))), t);
        auto b_h = round_to(random_normal(size_t(n_out), rng), t);
        auto res_h = round_to(random_normal(size_t(n_out), rng), t);
        Tensor x = upload(x_h, t, {1, in}), g = upload(g_h, t, {in}), w = upload(w_h, t, {n_out, in});
        Tensor bias = c.bias ? upload(b_h, t, {n_out}) : Tensor{};
        Tensor host_bias = c.bias ? host_view(b_h, {n_out}) : Tensor{};

        Tensor out = empty(t, {1, n_out});
        run(out, x, w, bias, {}, kernel);
        std::vector<float> ref(static_cast<size_t>(n_out));
        cpu.linear(host_view(ref, {1, n_out}), host_view(x_h, {1, in}), host_view(w_h, {n_out, in}), host_bias);
        expect_close(download(out), round_to(ref, t), tolerance_for(t), "linear");

        Tensor logits = empty(DType::f32, {1, n_out});
        run(logits, x, w, Tensor{}, {}, kernel);
        cpu.linear(host_view(ref, {1, n_out}), host_view(x_h, {1, in}), host_view(w_h, {n_out, in}), Tensor{});
        expect_close(download(logits), ref, {1e-4, 1e-5}, "linear, f32 out");

        Tensor res = upload(res_h, t, {1, n_out});
        cuda::GemvFusion acc;
        acc.accumulate = true;
        run(res, x, w, bias, acc, kernel);
        auto res_ref = res_h;
        cpu.linear_accumulate(host_view(res_ref, {1, n_out}), host_view(x_h, {1, in}), host_view(w_h, {n_out, in}),
                              host_bias);
        expect_close(download(res), round_to(res_ref, t), tolerance_for(t), "linear_accumulate");

        cuda::GemvFusion norm;
        norm.norm_weight = g;
        norm.eps = 1e-5f;
        out = empty(t, {1, n_out});
        run(out, x, w, bias, norm, kernel);
        std::vector<float> normed_ref(static_cast<size_t>(in));
        cpu.rms_norm_linear(host_view(ref, {1, n_out}), host_view(normed_ref, {1, in}), host_view(x_h, {1, in}),
                            host_view(g_h, {in}), 1e-5f, host_view(w_h, {n_out, in}), host_bias);
        expect_close(download(out), round_to(ref, t), tolerance_for(t), "rms_norm_linear");
      }
    }
  }
}

// [gate | up] with RMSNorm and SiLU * up: two weight rows an item.
TEST_F(CudaGemvKernels, GateUpSiluMatchesCpu) {
  struct Case {
    int64_t in, inter;
  };
  const Case cases[] = {{896, 4864}, {2048, 1500}, {4096, 1500}, {8192, 700}};
  for (GemvKernel kernel : {GemvKernel::registers, GemvKernel::bulk}) {
    for (DType t : {DType::bf16, DType::f16}) {
      for (const Case& c : cases) {
        SCOPED_TRACE(std::string(name_of(kernel)) + " " + short_name(t) + " in " + std::to_string(c.in) + " inter " +
                     std::to_string(c.inter));
        const int64_t in = c.in, inter = c.inter;
        auto x_h = round_to(random_normal(size_t(in), rng, 3.f), t);
        auto g_h = round_to(random_normal(size_t(in), rng), t);
        auto w_h = round_to(random_normal(size_t(2 * inter * in), rng, 1.f / std::sqrt(float(in))), t);
        cuda::GemvFusion f;
        f.norm_weight = upload(g_h, t, {in});
        f.eps = 1e-5f;
        f.silu_mul = true;
        Tensor act = empty(t, {1, inter});
        // The register kernel fuses a pair only up to a slice count (gemv.cu); skip where it does not.
        Tensor x = upload(x_h, t, {1, in}), w = upload(w_h, t, {2 * inter, in});
        if (kernel == GemvKernel::registers && !cuda::gemv_fusion_applies(act, x, w, Tensor{}, f, kernel)) continue;
        run(act, x, w, Tensor{}, f, kernel);
        std::vector<float> act_ref(static_cast<size_t>(inter)), gate_up_ref(size_t(2 * inter)), normed_ref(static_cast<size_t>(in));
        cpu.rms_norm_gate_up_silu(host_view(act_ref, {1, inter}), host_view(gate_up_ref, {1, 2 * inter}),
                                  host_view(normed_ref, {1, in}), host_view(x_h, {1, in}), host_view(g_h, {in}), 1e-5f,
                                  host_view(w_h, {2 * inter, in}));
        expect_close(download(act), round_to(act_ref, t), tolerance_for(t), "rms_norm_gate_up_silu");
      }
    }
  }
}

// qkv with RMSNorm, RoPE and the KV store: rotary pairs (i, i + d/2) of a head are an item;
// a stage never leaves one half of a head (head_dim 64 and 128).
TEST_F(CudaGemvKernels, QkvRopeStoreMatchesCpu) {
  struct Case {
    int64_t hidden, d, heads, kv;
    bool bias;
  };
  const Case cases[] = {{896, 64, 14, 2, true}, {2048, 64, 32, 8, false}, {4096, 128, 32, 8, false},
                        {8192, 128, 8, 2, true}};
  for (GemvKernel kernel : {GemvKernel::registers, GemvKernel::bulk}) {
    for (DType t : {DType::bf16, DType::f16}) {
      for (const Case& c : cases) {
        SCOPED_TRACE(std::string(name_of(kernel)) + " " + short_name(t) + " hidden " + std::to_string(c.hidden) +
                     " d " + std::to_string(c.d));
        const int64_t h = c.hidden, d = c.d, heads = c.heads, kv = c.kv, width = (heads + 2 * kv) * d, n_slots = 7;
        auto x_h = round_to(random_normal(size_t(h), rng, 2.f), t);
        auto g_h = round_to(random_normal(size_t(h), rng), t);
        auto w_h = round_to(random_normal(size_t(width * h), rng, 1.f / std::sqrt(float(h))), t);
        auto b_h = round_to(random_normal(size_t(width), rng), t);
        std::vector<int32_t> pos = {1234}, slots = {5};
        std::vector<float> inv_freq(static_cast<size_t>(d / 2));
        for (int64_t j = 0; j < d / 2; ++j) inv_freq[size_t(j)] = std::pow(500000.f, -2.f * float(j) / float(d));

        cuda::GemvFusion f;
        f.norm_weight = upload(g_h, t, {h});
        f.eps = 1e-5f;
        f.rope_store = true;
        f.rope.positions = upload_index(pos, {1});
        f.rope.inv_freq = upload(inv_freq, DType::f32, {d / 2});
        f.rope.k_cache = empty(t, {n_slots, kv, d});  // NaN-poisoned: other slots stay NaN
        f.rope.v_cache = empty(t, {n_slots, kv, d});
        f.rope.slots = upload_index(slots, {1});
        f.rope.n_heads = int(heads);
        Tensor qkv = empty(t, {1, width}), x = upload(x_h, t, {1, h}), w = upload(w_h, t, {width, h});
        Tensor bias = c.bias ? upload(b_h, t, {width}) : Tensor{};
        if (kernel == GemvKernel::registers && !cuda::gemv_fusion_applies(qkv, x, w, bias, f, kernel)) continue;
        run(qkv, x, w, bias, f, kernel);

        std::vector<float> qkv_ref(static_cast<size_t>(width)), normed_ref(static_cast<size_t>(h));
        std::vector<float> kc_ref(size_t(n_slots * kv * d), NAN), vc_ref = kc_ref;
        RopeStoreArgs rr;
        rr.n_heads = int(heads);
        rr.positions = host_index(pos, {1});
        rr.inv_freq = host_view(inv_freq, {d / 2});
        rr.k_cache = host_view(kc_ref, {n_slots, kv, d});
        rr.v_cache = host_view(vc_ref, {n_slots, kv, d});
        rr.slots = host_index(slots, {1});
        cpu.rms_norm_qkv_rope_store(host_view(qkv_ref, {1, width}), host_view(normed_ref, {1, h}),
                                    host_view(x_h, {1, h}), host_view(g_h, {h}), 1e-5f, host_view(w_h, {width, h}),
                                    c.bias ? host_view(b_h, {width}) : Tensor{}, rr);
        const Tolerance tol = tolerance_for(t, {1e-4, 1e-5}, {1e-2, 1e-2}, {3e-2, 3e-2});  // two roundings in bf16
        expect_close(download(qkv), qkv_ref, tol, "qkv (q, k rotated; v)");
        // Slot 5 written, every other slot untouched (NaN).
        for (const auto& [got, want, what] : {std::tuple{download(f.rope.k_cache), kc_ref, "k_cache"},
                                              std::tuple{download(f.rope.v_cache), vc_ref, "v_cache"}}) {
          std::vector<float> got_w, want_w;
          for (size_t i = 0; i < got.size(); ++i) {
            ASSERT_EQ(std::isnan(got[i]), std::isnan(want[i])) << what << " element " << i;
            if (std::isnan(want[i])) continue;
            got_w.push_back(got[i]);
            want_w.push_back(want[i]);
          }
          EXPECT_EQ(got_w.size(), size_t(kv * d)) << what;
          expect_close(got_w, want_w, tol, what);
        }
      }
    }
  }
}

// Rows longer than a stage (32 KB; pairs: 16 KB each) do not fit the bulk kernel; the register
// kernel and the rule still take them.
TEST_F(CudaGemvKernels, BulkDeclinesRowsLongerThanAStage) {
  const int64_t n_out = 64;
  Tensor x = empty(DType::bf16, {1, 16384 + 8}), w = empty(DType::bf16, {n_out, 16384 + 8});
  Tensor out = empty(DType::bf16, {1, n_out});
  EXPECT_FALSE(cuda::gemv_fusion_applies(out, x, w, Tensor{}, {}, GemvKernel::bulk));
  EXPECT_TRUE(cuda::gemv_fusion_applies(out, x, w, Tensor{}, {}, GemvKernel::registers));
  EXPECT_TRUE(cuda::gemv_fusion_applies(out, x, w, Tensor{}, {}, GemvKernel::by_rule));
  Tensor x2 = empty(DType::bf16, {1, 16384}), w2 = empty(DType::bf16, {n_out, 16384});
  EXPECT_TRUE(cuda::gemv_fusion_applies(out, x2, w2, Tensor{}, {}, GemvKernel::bulk));
}

}  // namespace
}  // namespace seam::test
