// stories260K on the GPU at float32 with --kv-cache-dtype fp8_e4m3, decode and piecewise graphs
// on (mixed chunks too): the CPU test (fp8_kv_cache_test.cpp) mirrored.
//
// Stated agreement (prompt tokens' logprobs): vs the GPU's float32-KV run <= 0.05 (E4M3's 3
// mantissa bits on K and V; the CPU measures 0.005); vs the CPU engine's FP8-KV run <= 1e-3
// (both store the same codes but where a key computed on the two devices differs in its last
// float bit across an E4M3 rounding boundary: a handful of codes one step apart at most);
// greedy ids equal to the float32-KV run's over 10 tokens while its top-1 margin is above 0.05.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/backend_factory.h"
#include "fp8_kv_run.h"
#include "golden.h"

namespace seam::test {
namespace {

struct EngineKvRun {
  KvRun run;
  nlohmann::json stats;
};

EngineKvRun run(Device device, const std::string& kv, bool mixed) {
  EngineConfig cfg = device == Device::cuda ? cuda_engine_config() : cpu_engine_config();
  cfg.kv_cache_dtype = kv;
  if (device == Device::cuda) cfg.enable_mixed_chunk = mixed;
  Engine engine(cfg);
  // The golden batch alongside (graphs, mixed chunks), then the measured prompt.
  std::vector<std::vector<int32_t>> prompts = {kv_run_prompt()};
  std::vector<SamplingParams> params = {kv_run_params()};
  for (auto& c : golden_cases()) prompts.push_back(c.prompt_ids), params.push_back(golden_params(c));
  EngineKvRun out{kv_run_of(engine.generate(prompts, params)[0]), {}};
  engine.wait_idle();
  out.stats = engine.stats().to_json();
  return out;
}

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::fabs(double(a[i]) - double(b[i])));
  return d;
}

TEST(CudaFp8KvEngine, Float32WeightsWithGraphs) {
  std::string why;
  if (!cuda_device_available(&why)) GTEST_SKIP() << "no GPU: " << why;
  const KvRun cpu_fp8 = run(Device::cpu, "fp8_e4m3", false).run;
  for (bool mixed : {false, true}) {
    SCOPED_TRACE(mixed ? "mixed chunks" : "plain");
    const KvRun f32 = run(Device::cuda, "auto", mixed).run;
    const EngineKvRun fp8_run = run(Device::cuda, "fp8_e4m3", mixed);
    const KvRun& fp8 = fp8_run.run;
    const double d_f32 = max_diff(fp8.prompt_logprobs, f32.prompt_logprobs);
    const double d_cpu = max_diff(fp8.prompt_logprobs, cpu_fp8.prompt_logprobs);
    EXPECT_LE(d_f32, 0.05);
    EXPECT_GT(d_f32, 0.0);  // the cache really holds E4M3 values
    EXPECT_LE(d_cpu, 1e-3);
    const int compared = expect_confident_ids_equal(f32, fp8, 0.05f);
    EXPECT_GE(compared, 3);
    EXPECT_EQ(fp8_run.stats["captures_after_seal"], 0);
    EXPECT_GT(fp8_run.stats["decode_graph_replays"], 0);
    EXPECT_GT(fp8_run.stats["piecewise_replays"], 0);
    std::printf("GPU FP8 KV%s: max |dlogprob| vs float32 KV %.4f, vs the CPU's FP8 KV %.2e; %d greedy ids compared\n",
                mixed ? " (mixed)" : "", d_f32, d_cpu, compared);
  }
}

}  // namespace
}  // namespace seam::test
