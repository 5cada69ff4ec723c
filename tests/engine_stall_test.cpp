// The engine loop waits, never spins, while requests wait that nothing can schedule: a
// request the KV pool can hold by validate()'s count but that admission cannot take (a
// prompt of the whole pool: admission keeps one slot more for the first decode step) stalls
// the queue; the loop counts one stalled schedule per wake-up (a submit or an abort), not
// thousands, and an abort of the stuck head lets the request behind it run.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "engine/engine.h"
#include "golden.h"

namespace seam::test {
namespace {

// Polls the stats until `pred` holds (or a few seconds pass); returns the last snapshot.
template <typename Pred>
EngineStats stats_when(Engine& engine, Pred pred) {
  EngineStats s = engine.stats();
  for (int i = 0; i < 500 && !pred(s); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    s = engine.stats();
  }
  return s;
}

TEST(EngineStall, LoopWaitsForSubmitOrAbortInsteadOfSpinning) {
  EngineConfig cfg = cpu_engine_config();
  cfg.max_total_tokens = 64;
  cfg.disable_cuda_graph = true;  // (no captures: the test is about the loop)
  Engine engine(cfg);
  ASSERT_EQ(engine.kv_pool_tokens(), 64);
  SamplingParams p;
  p.temperature = 0.f;
  p.max_new_tokens = 1;
  std::promise<RequestOutput> stuck_done;
  const std::vector<int32_t> whole_pool(64, 5);
  const uint64_t stuck = engine.submit(whole_pool, p, [&](const RequestOutput& o) {
    if (o.finished) stuck_done.set_value(o);
  });
  EngineStats s = stats_when(engine, [](const EngineStats& e) { return e.stalled_schedules >= 1; });
  ASSERT_EQ(s.stalled_schedules, 1u);
  EXPECT_EQ(s.waiting_requests, 1u);
  EXPECT_EQ(s.steps, 0u);
  // Nothing changes by itself: the loop sleeps (a spinning loop schedules thousands of times).
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(engine.stats().stalled_schedules, 1u);

  // A submit wakes it; the new request queues behind the stuck head (first come, first
  // served), so the loop stalls once more and sleeps again.
  const auto cases = golden_cases();
  SamplingParams q = golden_params(cases[0]);
  q.max_new_tokens = 20;  // fits the pool alone
  const std::vector<int32_t> expected(cases[0].generated_ids.begin(), cases[0].generated_ids.begin() + 20);
  std::promise<std::vector<int32_t>> next_done;
  std::vector<int32_t> next_ids;
  engine.submit(cases[0].prompt_ids, q, [&](const RequestOutput& o) {
    next_ids.insert(next_ids.end(), o.new_ids.begin(), o.new_ids.end());
    if (o.finished) next_done.set_value(next_ids);
  });
  s = stats_when(engine, [](const EngineStats& e) { return e.stalled_schedules >= 2; });
  EXPECT_EQ(s.stalled_schedules, 2u);
  EXPECT_EQ(s.waiting_requests, 2u);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(engine.stats().stalled_schedules, 2u);

  // An abort of the head wakes it too, and the request behind runs to its golden end.
  engine.abort(stuck);
  auto f = stuck_done.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(f.get().finish_reason, FinishReason::abort);
  auto g = next_done.get_future();
  ASSERT_EQ(g.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(g.get(), expected);
  engine.wait_idle();
  EXPECT_EQ(engine.stats().stalled_schedules, 2u);
}

}  // namespace
}  // namespace seam::test
