// Host time per step and the device step timer (issue 8): the runner's phases
// (prepare, launch, wait) and the device span on every path, the step timer's
// rules (no marks while capturing), the engine's per-phase stats adding up to
// the step wall time within the measured wall clock, and /metrics exposing them.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "golden.h"
#include "runner_fixture.h"
#include "server/server_metrics.h"

namespace seam::test {
namespace {

using Clock = std::chrono::steady_clock;
double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

const char* const k_phases[] = {"schedule", "prepare", "launch", "wait", "process", "detokenize", "handoff"};

GraphConfig small_graphs() {
  GraphConfig g;
  g.decode_buckets = {1, 2, 4, 8};
  g.piecewise_buckets = {8, 16, 32};
  return g;
}

// One forward through the runner, timed from outside; checks the phases against it.
void check_forward(RunnerFixture& f, const ForwardBatch& fb, StepPath want_path) {
  std::vector<int32_t> ids;
  StepReport report;
  const auto t0 = Clock::now();
  f.runner->forward(fb, ids, &report);
  const double wall_ms = ms_between(t0, Clock::now());
  EXPECT_EQ(report.path, want_path);
  const StepTiming& t = f.runner->last_timing();
  EXPECT_GE(t.prepare_ms, 0);
  EXPECT_GT(t.launch_ms, 0);  // the cpu backend runs every op inside launch
  EXPECT_GE(t.wait_ms, 0);
  EXPECT_LE(t.prepare_ms + t.launch_ms + t.wait_ms, wall_ms);
  // The device span lies inside the step: after forward() began, before it returned.
  EXPECT_GT(t.gpu_ms, 0);
  EXPECT_LE(t.gpu_ms, t.prepare_ms + t.launch_ms + t.wait_ms);
}

TEST(HostTime, RunnerPhasesOnEveryPath) {
  RunnerFixture f(small_graphs());
  f.fill_prefixes({{12, 1}, {20, 1}, {7, 1}});
  check_forward(f, f.batch({}, {{12, 1}, {20, 1}, {7, 1}}), StepPath::decode_graph);
  check_forward(f, f.batch({{0, 10}}, {}, 3), StepPath::piecewise_graph);
  check_forward(f, f.batch({{0, 40}}, {}, 4), StepPath::eager);  // past the largest token bucket
  // forward_eager times its step too, and a new step starts from zero.
  std::vector<int32_t> ids;
  f.runner->forward_eager(f.batch({{0, 5}}, {}, 5), ids);
  const StepTiming& t = f.runner->last_timing();
  EXPECT_GT(t.launch_ms, 0);
  EXPECT_GT(t.gpu_ms, 0);
}

TEST(HostTime, StepTimerIsNeverMarkedInsideACapture) {
  CpuBackend be;
  EXPECT_THROW(be.timer_elapsed_ms(), Error);  // nothing timed yet
  be.begin_capture();
  EXPECT_THROW(be.timer_begin(), Error);
  EXPECT_THROW(be.timer_end(), Error);
  auto g = be.end_capture();
  be.timer_begin();
  EXPECT_THROW(be.timer_elapsed_ms(), Error);  // begun, not ended
  be.timer_end();
  const double ms = be.timer_elapsed_ms();
  EXPECT_GE(ms, 0);
  be.timer_begin();  // a new span forgets the old end
  EXPECT_THROW(be.timer_elapsed_ms(), Error);
}

// The value of one /metrics sample line `name value`, or NaN when absent.
double metric(const std::string& text, const std::string& name) {
  const std::string key = "\n" + name + " ";
  const size_t at = text.find(key);
  if (at == std::string::npos) return std::nan("");
  return std::strtod(text.c_str() + at + key.size(), nullptr);
}

class EngineHostTime : public ::testing::TestWithParam<bool> {};

TEST_P(EngineHostTime, PhasesAddUpWithinTheWallClock) {
  EngineConfig cfg = cpu_engine_config();
  cfg.disable_cuda_graph = GetParam();
  cfg.chunked_prefill_size = 32;  // several EXTEND steps, then DECODE
  Engine engine(cfg);
  std::vector<std::vector<int32_t>> prompts;
  std::vector<SamplingParams> params;
  for (const auto& c : golden_cases()) {
    prompts.push_back(c.prompt_ids);
    params.push_back(golden_params(c));
  }
  const auto t0 = Clock::now();  // the engine loop runs no step before this submission
  engine.generate(prompts, params);
  engine.wait_idle();
  const double wall_ms = ms_between(t0, Clock::now());
  const EngineStats typed = engine.stats();
  const nlohmann::json s = typed.to_json();

  const double n_steps = s["steps"].get<double>();
  ASSERT_GT(n_steps, 0);
  double sum_ms = 0;
  for (const char* phase : k_phases) {
    const std::string key = std::string("host_") + phase + "_ms_per_step";
    ASSERT_TRUE(s.contains(key) && s[key].is_number()) << key;
    EXPECT_GE(s[key].get<double>(), 0) << key;
    sum_ms += s[key].get<double>();
  }
  // Every step detokenized a token and handed an output to its callback.
  EXPECT_GT(s["host_detokenize_ms_per_step"].get<double>(), 0);
  EXPECT_GT(s["host_handoff_ms_per_step"].get<double>(), 0);
  EXPECT_GT(s["host_launch_ms_per_step"].get<double>(), 0);
  // The phases are consecutive: they are the step wall time, which is inside the wall clock.
  const double step_ms = s["step_wall_ms_per_step"].get<double>();
  EXPECT_NEAR(sum_ms, step_ms, 1e-9 * n_steps + 1e-6 * step_ms);
  EXPECT_LE(sum_ms * n_steps, wall_ms);
  EXPECT_DOUBLE_EQ(s["forward_ms_per_step"].get<double>(), s["host_prepare_ms_per_step"].get<double>() +
                                                               s["host_launch_ms_per_step"].get<double>() +
                                                               s["host_wait_ms_per_step"].get<double>());
  const double gpu_ms = s["gpu_ms_per_step"].get<double>();
  const double busy = s["gpu_busy_fraction"].get<double>();
  EXPECT_GT(gpu_ms, 0);
  EXPECT_GT(busy, 0);
  EXPECT_LE(busy, 1);
  EXPECT_NEAR(busy, gpu_ms / step_ms, 1e-9);

  // /metrics: every phase under seam_host_ms_per_step, and the GPU gauges, with the stats' values.
  const std::string text = "\n" + ServerMetrics().render(&typed, 0);
  for (const char* phase : k_phases) {
    const std::string name = std::string("seam_host_ms_per_step{phase=\"") + phase + "\"}";
    EXPECT_EQ(metric(text, name), s[std::string("host_") + phase + "_ms_per_step"].get<double>()) << name;
  }
  EXPECT_EQ(metric(text, "seam_gpu_busy_fraction"), busy);
  EXPECT_EQ(metric(text, "seam_gpu_ms_per_step"), gpu_ms);
  EXPECT_EQ(metric(text, "seam_step_wall_ms_per_step"), step_ms);
  EXPECT_NE(text.find("# TYPE seam_gpu_busy_fraction gauge"), std::string::npos);
  EXPECT_EQ(text.find("phase=\"forward\""), std::string::npos);  // it overlapped prepare/launch/wait
}

INSTANTIATE_TEST_SUITE_P(Graphs, EngineHostTime, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "eager" : "graphs"; });

}  // namespace
}  // namespace seam::test
