// --kv-cache-dtype fp8_e4m3: the flag, the pool's size (twice the tokens of a bf16 pool for the
// same memory), the checkpoint k/v scales (model/kv_cache_scales.h) and the ops' scaled codes,
// and the tiny model end to end on the CPU backend against the float64 reference with K/V
// rounded to E4M3 and against the float KV cache.
//
// Stated agreement (prompt tokens' logprobs): vs the float64 reference with E4M3 K/V
// <= 1e-4 (float32 vs float64 sums); vs the float32-KV engine <= 0.05 (E4M3's 3 mantissa bits
// on K and V); greedy ids equal to the float32-KV run's over 10 tokens where its top-1 margin
// is above 0.05. With k/v scales other than 1 (a ModelOpt checkpoint) the engine agrees with
// the reference using the same scales <= 1e-4.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "backend/cpu/cpu_backend.h"
#include "core/fp8.h"

#include "engine/engine_setup.h"
#include "engine/kv_cache_dtype.h"
#include "fp8_kv_run.h"
#include "fp8_reference.h"
#include "golden.h"
#include "kv/kv_pool.h"
#include "model/fp8_export.h"
#include "model/kv_cache_scales.h"
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
  EXPECT_EQ(resolve_kv_cache_dtype("fp8_e4m3", DType::bf16, Device::cuda), DType::fp8_e4m3);  // every kernel reads it
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

// A ModelOpt export of the tiny model (k/v scales 1.0 on every layer's k_proj / v_proj) with
// the scales rewritten: layer l's k scale k[l], v scale v[l].
std::string scaled_modelopt(const std::vector<float>& k, const std::vector<float>& v) {
  const std::string dir = make_temp_dir("fp8kv");
  export_fp8_checkpoint(stories_dir(), dir, Fp8ExportOptions{Fp8ExportFormat::modelopt});
  edit_model_tensors(dir, [&](std::vector<StTensor>& ts) {
    for (StTensor& t : ts)
      for (size_t l = 0; l < k.size(); ++l)
        for (const auto& [suffix, value] :
             {std::pair{".self_attn.k_proj.k_scale", k[l]}, std::pair{".self_attn.v_proj.v_scale", v[l]}})
          if (t.name == "model.layers." + std::to_string(l) + suffix)
            t.bytes = std::string(reinterpret_cast<const char*>(&value), 4);
  });
  return dir;
}

TEST(Fp8KvCache, CheckpointScales) {
  ModelConfig c = load_model_config(stories_dir());
  const std::vector<float> k = {0.75f, 1.f, 1.5f, 1.f, 1.f}, v = {1.f, 0.5f, 2.f, 1.f, 1.f};
  ASSERT_LE(size_t(c.n_layers), k.size());
  const std::string dir = scaled_modelopt({k.begin(), k.begin() + c.n_layers}, {v.begin(), v.begin() + c.n_layers});
  c = load_model_config(dir);
  auto ck = Checkpoint::open(dir, c);
  ASSERT_EQ(ck->kv_scales.size(), size_t(2 * c.n_layers));
  const std::vector<KvScales> s = kv_cache_scales(ck->kv_scales, c.n_layers);
  ASSERT_EQ(s.size(), size_t(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) {
    EXPECT_EQ(s[size_t(l)].k, k[size_t(l)]) << l;
    EXPECT_EQ(s[size_t(l)].v, v[size_t(l)]) << l;
  }
  ck.reset();
  std::filesystem::remove_all(dir);
}

// AutoFP8's older checkpoints: one "self_attn.kv_scale" a layer for both caches (vLLM reads it
// as k_scale = v_scale). A layer that also stores its own k_scale is refused.
TEST(Fp8KvCache, CombinedKvScale) {
  ModelConfig c = load_model_config(stories_dir());
  const std::vector<float> kv = {0.75f, 1.5f, 2.f, 0.25f, 3.f};
  ASSERT_LE(size_t(c.n_layers), kv.size());
  // A fresh ModelOpt export with its k_proj.k_scale / v_proj.v_scale replaced by combined scales.
  auto rewrite = [&](bool keep_one_k_scale) {
    const std::string dir = scaled_modelopt({}, {});
    edit_model_tensors(dir, [&](std::vector<StTensor>& ts) {
      std::vector<StTensor> kept;
      for (StTensor& t : ts) {
        const bool kv_tensor =
            t.name.find(".k_proj.k_scale") != std::string::npos || t.name.find(".v_proj.v_scale") != std::string::npos;
        if (!kv_tensor || (keep_one_k_scale && t.name == "model.layers.1.self_attn.k_proj.k_scale"))
          kept.push_back(std::move(t));
      }
      ts = std::move(kept);
      for (int l = 0; l < c.n_layers; ++l) {
        // ModelOpt puts its scales on k_proj / v_proj; the combined one sits on the projection's
        // attention module, as AutoFP8 wrote it ("self_attn.kv_scale") — here beside k_proj so a
        // kept k_proj.k_scale collides with it.
        ts.push_back({"model.layers." + std::to_string(l) + ".self_attn.k_proj.kv_scale", "F32", {},
                      std::string(reinterpret_cast<const char*>(&kv[size_t(l)]), 4)});
      }
    });
    return dir;
  };
  const std::string dir = rewrite(false);
  c = load_model_config(dir);
  auto ck = Checkpoint::open(dir, c);
  ASSERT_EQ(ck->kv_scales.size(), size_t(2 * c.n_layers));
  const std::vector<KvScales> s = kv_cache_scales(ck->kv_scales, c.n_layers);
  for (int l = 0; l < c.n_layers; ++l) {
    EXPECT_EQ(s[size_t(l)].k, kv[size_t(l)]) << l;
    EXPECT_EQ(s[size_t(l)].v, kv[size_t(l)]) << l;
  }
  ck.reset();
  std::filesystem::remove_all(dir);
  const std::string both = rewrite(true);
  expect_error([&] { Checkpoint::open(both, c); },
               "tensors 'model.layers.1.self_attn.k_proj.kv_scale' and 'model.layers.1.self_attn.k_proj.k_scale' both "
               "give the k cache scale");
  std::filesystem::remove_all(both);
}

TEST(Fp8KvCache, ScaleNamesAndErrors) {
  const float half = 0.5f, two = 2.f;
  auto scalar = [](const float& x, const std::string& name) { return HostTensor{name, DType::f32, {}, &x}; };
  std::map<std::string, HostTensor> m;
  // compressed-tensors on the attention module, ModelOpt on the projection, vLLM's remapped form.
  m.emplace("model.layers.0.self_attn.k_scale", scalar(half, "model.layers.0.self_attn.k_scale"));
  m.emplace("model.layers.1.self_attn.v_proj.v_scale", scalar(two, "model.layers.1.self_attn.v_proj.v_scale"));
  m.emplace("model.layers.2.self_attn.attn.k_scale", scalar(two, "model.layers.2.self_attn.attn.k_scale"));
  auto s = kv_cache_scales(m, 3);
  EXPECT_EQ(s[0].k, 0.5f);
  EXPECT_EQ(s[0].v, 1.f);  // absent: 1.0
  EXPECT_EQ(s[1].k, 1.f);
  EXPECT_EQ(s[1].v, 2.f);
  EXPECT_EQ(s[2].k, 2.f);
  expect_error([&] { kv_cache_scales(m, 2); },
               "tensor 'model.layers.2.self_attn.attn.k_scale': a KV cache scale must name a layer in [0, 2)");
  auto dup = m;
  dup.emplace("model.layers.0.self_attn.k_proj.k_scale", scalar(half, "model.layers.0.self_attn.k_proj.k_scale"));
  expect_error([&] { kv_cache_scales(dup, 3); }, "both give layer 0's k cache scale");
  std::map<std::string, HostTensor> no_layer;
  no_layer.emplace("lm_head.k_scale", scalar(half, "lm_head.k_scale"));
  expect_error([&] { kv_cache_scales(no_layer, 3); }, "tensor 'lm_head.k_scale': a KV cache scale must name a layer");
}

// The ops' definition with scales: store_kv writes e4m3(x / scale); attention over the codes
// equals attention over a float cache holding code * scale, exactly (the same float sums).
TEST(Fp8KvCache, CpuOpsApplyTheScales) {
  CpuBackend cpu;
  const int64_t n = 6, kv = 2, d = 8, heads = 4;
  const KvScales sc{0.3f, 2.5f};
  std::vector<float> k(size_t(n * kv * d)), v(k.size()), q(size_t(n * heads * d));
  for (size_t i = 0; i < k.size(); ++i) {
    k[i] = std::sin(float(i) * 1.7f) * 3.f;
    v[i] = std::cos(float(i) * 0.9f) * 400.f;  // some beyond 448 * 2.5: saturated codes
  }
  v[3] = 5000.f;
  for (size_t i = 0; i < q.size(); ++i) q[i] = std::sin(float(i) * 0.37f);
  std::vector<uint8_t> kc(k.size()), vc(v.size());
  std::vector<int32_t> slots(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) slots[size_t(i)] = int32_t((i * 5) % n);
  cpu.store_kv(Tensor(kc.data(), DType::fp8_e4m3, Device::cpu, {n, kv, d}),
               Tensor(vc.data(), DType::fp8_e4m3, Device::cpu, {n, kv, d}), Tensor(k.data(), DType::f32, Device::cpu, {n, kv, d}),
               Tensor(v.data(), DType::f32, Device::cpu, {n, kv, d}), Tensor(slots.data(), DType::i32, Device::cpu, {n}), sc);
  std::vector<float> k_deq(k.size()), v_deq(v.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < kv * d; ++j) {
      const size_t at = size_t(slots[size_t(i)] * kv * d + j), src = size_t(i * kv * d + j);
      ASSERT_EQ(kc[at], f32_to_fp8_e4m3(k[src] / sc.k)) << src;
      ASSERT_EQ(vc[at], f32_to_fp8_e4m3(v[src] / sc.v)) << src;
      k_deq[at] = fp8_e4m3_to_f32(kc[at]) * sc.k;
      v_deq[at] = fp8_e4m3_to_f32(vc[at]) * sc.v;
    }
  EXPECT_EQ(vc[size_t(slots[0] * kv * d + 3)], 0x7e);  // 5000 / 2.5 saturates at 448
  // One sequence of n tokens, all new (prefill), causal.
  std::vector<int32_t> indptr = {0, int32_t(n)}, lens = {int32_t(n)}, rows = {0}, table(slots);
  AttentionBatch b;
  b.n_tokens = int(n);
  b.n_seqs = 1;
  b.n_prefill_seqs = 1;
  b.n_prefill_tokens = int(n);
  b.max_seq_len = int(n);
  b.qo_indptr = Tensor(indptr.data(), DType::i32, Device::cpu, {2});
  b.seq_lens = Tensor(lens.data(), DType::i32, Device::cpu, {1});
  b.req_rows = Tensor(rows.data(), DType::i32, Device::cpu, {1});
  b.page_table = Tensor(table.data(), DType::i32, Device::cpu, {1, n});
  AttentionOptions o;
  o.scale = 0.35f;
  o.kv_scales = sc;
  std::vector<float> out_fp8(q.size()), out_f32(q.size());
  const Tensor qt(q.data(), DType::f32, Device::cpu, {n, heads, d});
  cpu.attention(Tensor(out_fp8.data(), DType::f32, Device::cpu, {n, heads, d}), qt,
                Tensor(kc.data(), DType::fp8_e4m3, Device::cpu, {n, kv, d}),
                Tensor(vc.data(), DType::fp8_e4m3, Device::cpu, {n, kv, d}), b, o);
  AttentionOptions plain = o;
  plain.kv_scales = KvScales{};  // a float cache ignores them anyway
  cpu.attention(Tensor(out_f32.data(), DType::f32, Device::cpu, {n, heads, d}), qt,
                Tensor(k_deq.data(), DType::f32, Device::cpu, {n, kv, d}),
                Tensor(v_deq.data(), DType::f32, Device::cpu, {n, kv, d}), b, plain);
  EXPECT_EQ(out_fp8, out_f32);
  // Bad scales are op errors.
  o.kv_scales.v = 0.f;
  expect_error([&] { cpu.attention(Tensor(out_fp8.data(), DType::f32, Device::cpu, {n, heads, d}), qt,
                                   Tensor(kc.data(), DType::fp8_e4m3, Device::cpu, {n, kv, d}),
                                   Tensor(vc.data(), DType::fp8_e4m3, Device::cpu, {n, kv, d}), b, o); },
               "attention: KV cache scales (k 0.3, v 0) must be finite and > 0");
}

KvRun run(const std::string& kv, const std::string& model_dir = "") {
  EngineConfig cfg = cpu_engine_config();
  if (!model_dir.empty()) cfg.model_path = model_dir;
  cfg.kv_cache_dtype = kv;
  Engine engine(cfg);
  return kv_run_of(engine.generate({kv_run_prompt()}, {kv_run_params()})[0]);
}

TEST(Fp8KvCache, TinyModelEndToEnd) {
  const KvRun f32 = run("auto"), fp8 = run("fp8_e4m3");
  const std::vector<int32_t> prompt = kv_run_prompt();
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
  const int compared = expect_confident_ids_equal(f32, fp8, 0.05f);
  EXPECT_GE(compared, 3);
  std::printf("FP8 KV: max |dlogprob| vs reference %.2e, vs float32 KV %.3f; %d greedy ids compared\n", d_ref, d_f32,
              compared);
}

// Scales other than 1 (ModelOpt k_proj.k_scale / v_proj.v_scale, not powers of two, so the
// codes change): the engine with an FP8 cache agrees with the float64 reference that applies
// the same scales, and differs from the same checkpoint's unscaled FP8 cache run.
TEST(Fp8KvCache, ScaledCacheEndToEnd) {
  const ModelConfig c = load_model_config(stories_dir());
  std::vector<float> k(size_t(c.n_layers)), v(size_t(c.n_layers));
  for (size_t l = 0; l < k.size(); ++l) {
    k[l] = 0.37f + 0.29f * float(l);
    v[l] = 1.63f - 0.21f * float(l);
  }
  const std::string dir = scaled_modelopt(k, v), unscaled = scaled_modelopt(std::vector<float>(k.size(), 1.f),
                                                                            std::vector<float>(v.size(), 1.f));
  const KvRun scaled_run = run("fp8_e4m3", dir), unscaled_run = run("fp8_e4m3", unscaled);
  const std::vector<int32_t> prompt = kv_run_prompt();
  const auto lp = Fp8Reference(dir, false, true, /*kv_fp8=*/true).log_probs(prompt);
  double d_ref = 0, d_unscaled = 0;
  for (size_t t = 1; t < prompt.size(); ++t) {
    d_ref = std::max(d_ref, std::fabs(double(scaled_run.prompt_logprobs[t - 1]) - lp[t - 1][size_t(prompt[t])]));
    d_unscaled = std::max(d_unscaled, std::fabs(double(scaled_run.prompt_logprobs[t - 1] - unscaled_run.prompt_logprobs[t - 1])));
  }
  EXPECT_LE(d_ref, 1e-4);
  EXPECT_GT(d_unscaled, 10 * d_ref);  // the scales are applied
  std::printf("FP8 KV with k/v scales: max |dlogprob| vs reference %.2e, vs unscaled %.3f\n", d_ref, d_unscaled);
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(unscaled);
}

}  // namespace
}  // namespace seam::test
