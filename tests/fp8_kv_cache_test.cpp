// --kv-cache-dtype fp8_e4m3: the flag, the pool's size (twice the tokens of a bf16 pool for the
// same memory), the checkpoint k/v scales, and the tiny model end to end on the CPU backend
// against the float64 reference with K/V rounded to E4M3 and against the float KV cache.
//
// Stated agreement (prompt tokens' logprobs): vs the float64 reference with E4M3 K/V
// <= 1e-4 (float32 vs float64 sums); vs the float32-KV engine <= 0.05 (E4M3's 3 mantissa bits
// on K and V); greedy ids equal to the float32-KV run's over 10 tokens where its top-1 margin
// is above 0.05.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/engine_setup.h"
#include "engine/kv_cache_dtype.h"
#include "fp8_reference.h"
#include "golden.h"
#include "kv/kv_pool.h"
#include "model/fp8_export.h"
#include "safetensors_writer.h"

namespace seam::test {
namespace {

void expect_error(const std::function<void()>& f, const std::string& what) {
  try {
    f();
    FAIL() << "no error, expected: " << what;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << "got: " << e.what();
  }
}

TEST(Fp8KvCache, Flag) {
  EXPECT_EQ(resolve_kv_cache_dtype("auto", DType::f32, Device::cpu), DType::f32);
  EXPECT_EQ(resolve_kv_cache_dtype("auto", DType::bf16, Device::cuda), DType::bf16);
  EXPECT_EQ(resolve_kv_cache_dtype("fp8_e4m3", DType::f32, Device::cpu), DType::fp8_e4m3);
  EXPECT_EQ(resolve_kv_cache_dtype("fp8", DType::f32, Device::cpu), DType::fp8_e4m3);
  expect_error([] { resolve_kv_cache_dtype("fp8_e5m2", DType::f32, Device::cpu); }, "fp8_e5m2 is not supported");
  expect_error([] { resolve_kv_cache_dtype("int8", DType::f32, Device::cpu); },
               "--kv-cache-dtype: 'int8' is not one of auto, fp8_e4m3 (fp8)");
  expect_error([] { resolve_kv_cache_dtype("fp8_e4m3", DType::bf16, Device::cuda); },
               "the cuda attention kernels do not read an FP8 KV cache yet");
  // Through the engine: a bad value is a start-up error naming the flag.
  EngineConfig cfg = cpu_engine_config();
  cfg.kv_cache_dtype = "fp16";
  expect_error([&] { Engine e(cfg); }, "--kv-cache-dtype: 'fp16'");
}

TEST(Fp8KvCache, PoolHoldsTwiceTheTokensOfBf16) {
  KvPoolShape s{32, 8, 128, 0, 1, 1, DType::bf16};
  const size_t bf16 = KvPool::bytes_per_slot(s);
  s.dtype = DType::fp8_e4m3;
  const size_t fp8 = KvPool::bytes_per_slot(s);
  EXPECT_EQ(bf16, 2 * fp8);
  // The memory-sized pool (the GPU rule of kv_pool_slots) for the same budget.
  EngineConfig cfg;
  ResolvedSetup setup;
  const size_t gib = size_t(1) << 30;
  const int slots_bf16 = kv_pool_slots(cfg, setup, Device::cuda, 100 * gib, 100 * gib, 16 * gib, bf16);
  const int slots_fp8 = kv_pool_slots(cfg, setup, Device::cuda, 100 * gib, 100 * gib, 16 * gib, fp8);
  EXPECT_NEAR(double(slots_fp8) / double(slots_bf16), 2.0, 1e-6);
}

TEST(Fp8KvCache, CheckpointScales) {
  const std::string dir = make_temp_dir("fp8kv");
  export_fp8_checkpoint(stories_dir(), dir, Fp8ExportOptions{Fp8ExportFormat::modelopt});  // k/v scales 1.0
  ModelConfig c = load_model_config(dir);
  {
    auto ck = Checkpoint::open(dir, c);
    ASSERT_EQ(ck->kv_scales.size(), size_t(2 * c.n_layers));
    check_kv_cache_scales(DType::fp8_e4m3, *ck);  // all 1.0: accepted
  }
  // A scale of 0.5 is refused with the FP8 cache (not silently ignored), and ignored without it.
  auto f = SafetensorsFile::open(dir + "/model.safetensors");
  std::vector<StTensor> ts;
  for (const auto& name : f->tensor_names()) {
    HostTensor t = f->tensor(name);
    const char* d = t.dtype == DType::f32 ? "F32" : "F8_E4M3";
    ts.push_back({name, d, t.shape, std::string(static_cast<const char*>(t.data), size_t(t.numel()) * dtype_size(t.dtype))});
    if (name == "model.layers.1.self_attn.v_proj.v_scale") {
      const float half = 0.5f;
      ts.back().bytes = std::string(reinterpret_cast<const char*>(&half), 4);
    }
  }
  f.reset();
  write_safetensors(dir + "/model.safetensors", ts);
  auto ck = Checkpoint::open(dir, c);
  check_kv_cache_scales(DType::f32, *ck);
  expect_error([&] { check_kv_cache_scales(DType::fp8_e4m3, *ck); },
               "tensor 'model.layers.1.self_attn.v_proj.v_scale' is 0.5, and KV cache scales other than 1.0");
  ck.reset();
  std::filesystem::remove_all(dir);
}

struct KvRun {
  std::vector<int32_t> ids;
  std::vector<float> prompt_logprobs;
  std::vector<float> margins;  // top-1 minus top-2 logprob of each generated token
};

KvRun run(const std::string& kv) {
  EngineConfig cfg = cpu_engine_config();
  cfg.kv_cache_dtype = kv;
  Engine engine(cfg);
  std::vector<int32_t> prompt = golden_cases()[0].prompt_ids;
  prompt.resize(std::min<size_t>(prompt.size(), 24));
  SamplingParams p;
  p.temperature = 0.f;
  p.max_new_tokens = 10;
  p.logprobs = 2;
  p.prompt_logprobs = true;
  auto r = engine.generate({prompt}, {p});
  KvRun out;
  out.ids = r[0].output_ids;
  for (size_t t = 1; t < r[0].prompt_logprobs.size(); ++t) out.prompt_logprobs.push_back(r[0].prompt_logprobs[t].logprob);
  for (const auto& lp : r[0].logprobs) out.margins.push_back(lp.top.size() == 2 ? lp.top[0].second - lp.top[1].second : 0.f);
  return out;
}

TEST(Fp8KvCache, TinyModelEndToEnd) {
  const KvRun f32 = run("auto"), fp8 = run("fp8_e4m3");
  std::vector<int32_t> prompt = golden_cases()[0].prompt_ids;
  prompt.resize(std::min<size_t>(prompt.size(), 24));
  const Fp8Reference ref(stories_dir(), false, false, /*kv_fp8=*/true);
  const auto lp = ref.log_probs(prompt);
  double d_ref = 0, d_f32 = 0;
  for (size_t t = 1; t < prompt.size(); ++t) {
    d_ref = std::max(d_ref, std::fabs(double(fp8.prompt_logprobs[t - 1]) - lp[t - 1][size_t(prompt[t])]));
    d_f32 = std::max(d_f32, std::fabs(double(fp8.prompt_logprobs[t - 1] - f32.prompt_logprobs[t - 1])));
  }
  EXPECT_LE(d_ref, 1e-4);
  EXPECT_LE(d_f32, 0.05);
  EXPECT_GT(d_f32, 10 * d_ref);  // the cache really holds E4M3 values
  int compared = 0;
  for (size_t i = 0; i < f32.ids.size() && f32.margins[i] > 0.05f; ++i, ++compared) ASSERT_EQ(fp8.ids[i], f32.ids[i]) << i;
  EXPECT_GE(compared, 3);
  std::printf("FP8 KV: max |dlogprob| vs reference %.2e, vs float32 KV %.3f; %d greedy ids compared\n", d_ref, d_f32,
              compared);
}

}  // namespace
}  // namespace seam::test
