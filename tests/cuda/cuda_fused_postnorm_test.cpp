// Backend::linear_rms_norm_add on CUDA: Gemma's output projection and post-norm (o_proj + the
// post-attention norm, down_proj + the post-feed-forward norm), which the batch-1 GEMV's last
// block applies in one kernel (GemvFusion::post_norm), checked
//  - against the CPU backend (the definition: linear, out rounded to the dtype, rms_norm_add) at
//    the Gemma 2/3 layer sizes, plain and paired GEMV rows, with and without bias, and where the
//    fusion does not apply (the fallback);
//  - against the unfused CUDA ops it replaces (linear, then rms_norm_add), bit for bit: the
//    product runs linear's slices and the norm rms_norm_add's order of sums;
//  - replayed from a CUDA graph (a layer's two ops on one residual), each replay on new inputs:
//    every launch must leave its arrival counter zero for the next;
//  - over more eager launches than the backend has counters (each is reused);
//  - in whole tiny Gemma 2 and Gemma 3 models in bfloat16 (the GEMV is for 16-bit dtypes; the CPU
//    backend's float32 run of these models is cuda_tiny_families_test's): with the fusion
//    (SEAM_DECODE_FUSED_POSTNORM=1, the default) the logits of one-token forwards and the greedy
//    ids of a sequence decoded alone (batch-1 decode, from graphs and eagerly) equal, bit for bit,
//    those with it off, and the fused kernel was launched (only when on).
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/backend_factory.h"
#include "backend/cuda/gemv.h"
#include "core/error.h"
#include "cuda_test_util.h"
#include "engine/engine.h"
#include "engine/engine_bench_access.h"
#include "hf_reference.h"
#include "runtime/model_runner.h"
#include "test_util.h"

namespace seam::test {
namespace {

constexpr float kEps = 1e-6f;

class CudaFusedPostNorm : public CudaTest {
 public:
  struct Case {
    int64_t n_out, n_in;
    bool bias;
  };

 protected:
  struct Inputs {
    std::vector<float> x, w, b, g, residual;
  };
  Inputs make(DType t, const Case& c, int64_t n = 1) {
    Inputs in;
    in.x = round_to(random_normal(size_t(n * c.n_in), rng), t);
    in.w = round_to(random_normal(size_t(c.n_out * c.n_in), rng, 1.f / std::sqrt(float(c.n_in))), t);
    if (c.bias) in.b = round_to(random_normal(size_t(c.n_out), rng, 0.5f), t);
    in.g = random_normal(size_t(c.n_out), rng, 0.3f);  // Gemma's (1 + w), folded at load
    for (float& v : in.g) v += 1.f;
    in.g = round_to(in.g, t);
    in.residual = round_to(random_normal(size_t(n * c.n_out), rng, 3.f), t);
    return in;
  }
  // The definition on the CPU: out = x @ w^T (+ b) as the device stores it (rounded to t), then
  // residual += rms_norm(out) * g, rounded to t.
  void reference(DType t, const Case& c, int64_t n, Inputs& in, std::vector<float>& out, std::vector<float>& residual) {
    out.assign(size_t(n * c.n_out), 0.f);
    residual = in.residual;
    cpu.linear(host_view(out, {n, c.n_out}), host_view(in.x, {n, c.n_in}), host_view(in.w, {c.n_out, c.n_in}),
               c.bias ? host_view(in.b, {c.n_out}) : Tensor());
    out = round_to(out, t);
    cpu.rms_norm_add(host_view(residual, {n, c.n_out}), host_view(out, {n, c.n_out}), host_view(in.g, {c.n_out}), kEps);
    residual = round_to(residual, t);
  }
  void put(const Tensor& dst, const std::vector<float>& v) {
    Tensor tmp = upload(v, dst.dtype, {dst.numel()});
    gpu->copy_d2d(dst.data, tmp.data, dst.nbytes());
  }
};

// Gemma 3 4B (hidden 2560: o_proj from 8 heads of 256, down from 10,240), Gemma 2 9B (3584: 16
// heads, 14,336), Gemma 3 1B (1152: 4 heads, 6,912), Gemma 2 2B (2304: 8 heads, 9,216), a square
// 2560; a tiny one with a bias. The >= 16 MiB downs stream two rows a warp
// (gemv_pairs_plain_rows), the others one.
const CudaFusedPostNorm::Case kGemmaCases[] = {{2560, 2048, false},  {2560, 10240, false}, {3584, 4096, false},
                                               {3584, 14336, false}, {1152, 1024, false},  {1152, 6912, false},
                                               {2304, 9216, false},  {2560, 2560, false},  {64, 128, true}};

TEST_F(CudaFusedPostNorm, MatchesCpuAndTheUnfusedOpsBitForBit) {
  for (DType t : {DType::bf16, DType::f16})
    for (const Case& c : kGemmaCases) {
      SCOPED_TRACE(std::string(short_name(t)) + " out " + std::to_string(c.n_out) + " in " + std::to_string(c.n_in));
      Inputs in = make(t, c);
      Tensor x = upload(in.x, t, {1, c.n_in}), w = upload(in.w, t, {c.n_out, c.n_in}), g = upload(in.g, t, {c.n_out});
      Tensor b = c.bias ? upload(in.b, t, {c.n_out}) : Tensor();
      Tensor out = empty(t, {1, c.n_out}), residual = upload(in.residual, t, {1, c.n_out});
      Tensor out_u = empty(t, {1, c.n_out}), residual_u = upload(in.residual, t, {1, c.n_out});
      const int64_t launches = cuda::gemv_post_norm_launches();
      gpu->linear_rms_norm_add(residual, out, x, w, b, g, kEps);
      EXPECT_EQ(cuda::gemv_post_norm_launches(), launches + 1) << "the fused kernel ran";
      gpu->linear(out_u, x, w, b);
      gpu->rms_norm_add(residual_u, out_u, g, kEps);
      std::vector<float> out_ref, residual_ref;
      reference(t, c, 1, in, out_ref, residual_ref);
      const std::vector<float> got_out = download(out), got_residual = download(residual);
      expect_close(got_out, out_ref, tolerance_for(t), "out vs cpu");
      expect_close(got_residual, residual_ref, tolerance_for(t), "residual vs cpu");
      expect_close(got_out, download(out_u), {0, 0}, "out vs linear");
      expect_close(got_residual, download(residual_u), {0, 0}, "residual vs linear + rms_norm_add");
    }
}

// Shapes the fused kernel does not take (out not a whole number of 16-byte vectors; two rows;
// float32) run as linear + rms_norm_add, still the definition.
TEST_F(CudaFusedPostNorm, FallsBackWhereTheFusionDoesNotApply) {
  struct Fallback {
    DType t;
    Case c;
    int64_t n;
  };
  const Fallback cases[] = {{DType::bf16, {60, 64, false}, 1}, {DType::bf16, {2560, 2048, false}, 2},
                            {DType::f32, {256, 512, true}, 1}};
  for (const Fallback& f : cases) {
    SCOPED_TRACE(std::string(short_name(f.t)) + " out " + std::to_string(f.c.n_out) + " rows " + std::to_string(f.n));
    Inputs in = make(f.t, f.c, f.n);
    Tensor x = upload(in.x, f.t, {f.n, f.c.n_in}), w = upload(in.w, f.t, {f.c.n_out, f.c.n_in});
    Tensor g = upload(in.g, f.t, {f.c.n_out}), b = f.c.bias ? upload(in.b, f.t, {f.c.n_out}) : Tensor();
    Tensor out = empty(f.t, {f.n, f.c.n_out}), residual = upload(in.residual, f.t, {f.n, f.c.n_out});
    const int64_t launches = cuda::gemv_post_norm_launches();
    gpu->linear_rms_norm_add(residual, out, x, w, b, g, kEps);
    EXPECT_EQ(cuda::gemv_post_norm_launches(), launches) << "not the fused kernel";
    std::vector<float> out_ref, residual_ref;
    reference(f.t, f.c, f.n, in, out_ref, residual_ref);
    const Tolerance tol = tolerance_for(f.t, {1e-5, 1e-5});  // f32: cuBLASLt's bound (cuda_linear_test)
    expect_close(download(out), out_ref, tol, "out vs cpu");
    expect_close(download(residual), residual_ref, tol, "residual vs cpu");
  }
}

// A Gemma 3 4B layer's two fused ops captured once (o_proj then down, one residual), replayed with
// new activations and a new residual each time: a counter left non-zero by one launch would make
// the next launch's last block miss its turn and leave the residual unchanged.
TEST_F(CudaFusedPostNorm, ReplaysFromAGraph) {
  const DType t = DType::bf16;
  const Case o{2560, 2048, false}, down{2560, 10240, false};
  Inputs io = make(t, o), id = make(t, down);
  Tensor x_o = empty(t, {1, o.n_in}), x_d = empty(t, {1, down.n_in});
  Tensor w_o = upload(io.w, t, {o.n_out, o.n_in}), w_d = upload(id.w, t, {down.n_out, down.n_in});
  Tensor g_o = upload(io.g, t, {o.n_out}), g_d = upload(id.g, t, {down.n_out});
  Tensor out_o = empty(t, {1, o.n_out}), out_d = empty(t, {1, down.n_out}), residual = empty(t, {1, o.n_out});
  const int64_t launches = cuda::gemv_post_norm_launches();
  gpu->begin_capture();
  gpu->linear_rms_norm_add(residual, out_o, x_o, w_o, Tensor(), g_o, kEps);
  gpu->linear_rms_norm_add(residual, out_d, x_d, w_d, Tensor(), g_d, kEps);
  std::unique_ptr<Graph> graph = gpu->end_capture();
  EXPECT_EQ(cuda::gemv_post_norm_launches(), launches + 2) << "both captured as the fused kernel";
  for (int replay = 0; replay < 4; ++replay) {
    SCOPED_TRACE("replay " + std::to_string(replay));
    io.x = round_to(random_normal(size_t(o.n_in), rng), t);
    id.x = round_to(random_normal(size_t(down.n_in), rng), t);
    io.residual = round_to(random_normal(size_t(o.n_out), rng, 3.f), t);
    put(x_o, io.x);
    put(x_d, id.x);
    put(residual, io.residual);
    gpu->replay(*graph);
    gpu->synchronize();
    std::vector<float> out_o_ref, out_d_ref, residual_ref;
    reference(t, o, 1, io, out_o_ref, residual_ref);
    id.residual = residual_ref;  // down's post-norm adds to what o_proj's left
    reference(t, down, 1, id, out_d_ref, residual_ref);
    expect_close(download(out_o), out_o_ref, tolerance_for(t), "o_proj out");
    expect_close(download(out_d), out_d_ref, tolerance_for(t), "down out");
    expect_close(download(residual), residual_ref, tolerance_for(t), "residual");
  }
}

// Eager launches take the backend's counters in turn; more launches than there are counters reuse
// each. Every launch must apply the norm: the fused residual equals, bit for bit, one updated by
// linear + rms_norm_add the same number of times.
TEST_F(CudaFusedPostNorm, EveryEagerLaunchAppliesTheNorm) {
  const DType t = DType::bf16;
  const Case c{1152, 1024, false};
  Inputs in = make(t, c);
  Tensor x = upload(in.x, t, {1, c.n_in}), w = upload(in.w, t, {c.n_out, c.n_in}), g = upload(in.g, t, {c.n_out});
  Tensor out = empty(t, {1, c.n_out}), residual = upload(in.residual, t, {1, c.n_out});
  Tensor out_u = empty(t, {1, c.n_out}), residual_u = upload(in.residual, t, {1, c.n_out});
  const int n_launches = 2 * 64 + 3;  // past CudaBackend::kPostNormCounters twice
  for (int i = 0; i < n_launches; ++i) {
    gpu->linear_rms_norm_add(residual, out, x, w, Tensor(), g, kEps);
    gpu->linear(out_u, x, w, Tensor());
    gpu->rms_norm_add(residual_u, out_u, g, kEps);
  }
  const std::vector<float> got = download(residual), want = download(residual_u);
  expect_close(got, want, {0, 0}, "residual after every launch");
  EXPECT_NE(got, in.residual) << "the launches changed the residual";
}

// The switch is read when a backend is made: a value other than 0 or 1 is an error naming it.
TEST(CudaFusedPostNormSwitch, RejectsABadValue) {
  std::string why;
  if (!cuda_device_present(&why)) GTEST_SKIP() << "no GPU: " << why;
  setenv("SEAM_DECODE_FUSED_POSTNORM", "2", 1);
  try {
    make_cuda_backend(0);
    ADD_FAILURE() << "expected seam::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("SEAM_DECODE_FUSED_POSTNORM"), std::string::npos) << e.what();
  }
  unsetenv("SEAM_DECODE_FUSED_POSTNORM");
}

// ---- whole models ----

struct ModelRun {
  std::vector<std::vector<float>> logits;  // one-token forwards, eager
  std::vector<int32_t> ids_graph, ids_eager;  // one sequence decoded alone
  int64_t fused_launches = 0;
};

std::vector<int32_t> decode_alone(const EngineConfig& cfg, const std::vector<int32_t>& prompt) {
  Engine engine(cfg);
  SamplingParams sp;
  sp.temperature = 0;
  sp.max_new_tokens = 24;
  sp.ignore_eos = true;
  std::vector<int32_t> ids = engine.generate({prompt}, {sp}).at(0).output_ids;
  engine.wait_idle();
  return ids;
}

ModelRun run_model(const std::string& dir, const std::vector<RefPrompt>& prompts, bool fused) {
  setenv("SEAM_DECODE_FUSED_POSTNORM", fused ? "1" : "0", 1);
  const int64_t launches = cuda::gemv_post_norm_launches();
  ModelRun r;
  EngineConfig cfg = tiny_engine_config(dir);
  cfg.device = Device::cuda;
  cfg.dtype = "bfloat16";
  r.ids_graph = decode_alone(cfg, prompts.at(0).ids);
  cfg.disable_cuda_graph = true;
  r.ids_eager = decode_alone(cfg, prompts.at(0).ids);
  {
    Engine engine(cfg);
    std::vector<RefPrompt> one_token;
    for (const RefPrompt& p : prompts) {
      RefPrompt first;
      first.ids = {p.ids.at(0)};
      one_token.push_back(first);
    }
    r.logits = run_logits(EngineBenchAccess::runner(engine), one_token, engine.model_info().vocab_size, 64,
                          /*batched=*/false);
  }
  r.fused_launches = cuda::gemv_post_norm_launches() - launches;
  unsetenv("SEAM_DECODE_FUSED_POSTNORM");
  return r;
}

class TinyGemmaPostNorm : public ::testing::TestWithParam<std::string> {};

TEST_P(TinyGemmaPostNorm, FusedEqualsUnfusedBitForBit) {
  std::string why;
  if (!cuda_device_available(&why)) GTEST_SKIP() << "no GPU: " << why;
  const std::string dir = std::string(SEAM_SOURCE_DIR) + "/tests/data/hf_tiny/" + GetParam();
  const std::vector<RefPrompt> prompts = load_hf_reference(dir);
  ASSERT_FALSE(prompts.empty());
  const ModelRun on = run_model(dir, prompts, true), off = run_model(dir, prompts, false);
  EXPECT_GT(on.fused_launches, 0) << "the fused post-norm GEMV ran";
  EXPECT_EQ(off.fused_launches, 0) << "SEAM_DECODE_FUSED_POSTNORM=0 turned it off";
  ASSERT_EQ(on.logits.size(), off.logits.size());
  for (size_t i = 0; i < on.logits.size(); ++i) EXPECT_EQ(on.logits[i], off.logits[i]) << "prompt " << i;
  EXPECT_EQ(on.ids_graph, off.ids_graph) << "decode from graphs";
  EXPECT_EQ(on.ids_eager, off.ids_eager) << "eager decode";
  EXPECT_EQ(on.ids_graph.size(), 24u);
}

INSTANTIATE_TEST_SUITE_P(HfTiny, TinyGemmaPostNorm, ::testing::Values("tiny-gemma2", "tiny-gemma3"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

}  // namespace
}  // namespace seam::test
