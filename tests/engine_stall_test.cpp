// The engine loop never stalls on a request that validate() accepted: admission
// (Scheduler::admit) reserves exactly what validate() counts, so such a request fits an
// empty pool. A request that waits for KV another request holds does not make the loop
// schedule idle steps (a spin, or a stall the loop would sleep on): the loop steps the
// holder, and the waiter runs once the holder is done. The boundary -- a prompt of the
// whole pool with max_new_tokens 1, which samples its one token from the prefill's logits
// and so needs no decode slot -- completes; with max_new_tokens 2 it is refused up front.
// (The loop's sleep on an idle schedule that changed nothing rests on the scheduler's side
// of the contract, tested in scheduler_admission_test.cpp: such a schedule changes nothing
// and repeats until a submit or an abort changes what can run.)
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <vector>

#include "api/error_kind.h"
#include "engine/engine.h"
#include "golden.h"

namespace seam::test {
namespace {

constexpr int kPool = 64;

EngineConfig pool_config(int max_total_tokens) {
  EngineConfig cfg = cpu_engine_config();
  cfg.max_total_tokens = max_total_tokens;
  cfg.disable_cuda_graph = true;  // (no captures: the tests are about admission and the loop)
  return cfg;
}

SamplingParams greedy(int max_new_tokens) {
  SamplingParams p;
  p.temperature = 0.f;
  p.max_new_tokens = max_new_tokens;
  return p;
}

// The whole-pool prompt, not a prefix of anything else submitted.
std::vector<int32_t> whole_pool_prompt() { return std::vector<int32_t>(kPool, 5); }

TEST(EngineStall, AWholePoolPromptWaitsForTheHolderWithoutIdleSchedules) {
  Engine engine(pool_config(kPool));
  ASSERT_EQ(engine.kv_pool_tokens(), kPool);
  // The holder: a golden request whose KV leaves too little of the pool for the
  // whole-pool prompt while it runs.
  const auto cases = golden_cases();
  constexpr int n_holder = 20;
  const SamplingParams holder_params = [&] {
    SamplingParams q = golden_params(cases[0]);
    q.max_new_tokens = n_holder;
    return q;
  }();
  ASSERT_LE(cases[0].prompt_ids.size() + n_holder - 1, size_t(kPool));  // fits the pool alone
  const std::vector<int32_t> expected(cases[0].generated_ids.begin(), cases[0].generated_ids.begin() + n_holder);
  std::promise<std::vector<int32_t>> holder_done;
  std::vector<int32_t> holder_ids;
  engine.submit(cases[0].prompt_ids, holder_params, [&](const RequestOutput& o) {
    holder_ids.insert(holder_ids.end(), o.new_ids.begin(), o.new_ids.end());
    if (o.finished) holder_done.set_value(holder_ids);
  });
  std::promise<RequestOutput> waiter_done;
  std::vector<int32_t> waiter_ids;
  engine.submit(whole_pool_prompt(), greedy(1), [&](const RequestOutput& o) {
    waiter_ids.insert(waiter_ids.end(), o.new_ids.begin(), o.new_ids.end());
    if (o.finished) waiter_done.set_value(o);
  });
  auto h = holder_done.get_future();
  ASSERT_EQ(h.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(h.get(), expected);
  auto w = waiter_done.get_future();
  ASSERT_EQ(w.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  const RequestOutput out = w.get();
  EXPECT_TRUE(out.error.empty()) << out.error;
  EXPECT_EQ(out.finish_reason, FinishReason::length);
  ASSERT_EQ(waiter_ids.size(), 1u);
  engine.wait_idle();
  const EngineStats s = engine.stats();
  EXPECT_EQ(s.stalled_schedules, 0u);
  // Every step ran a batch: the holder's prefill and its decode steps, then the waiter's
  // single prefill (its token comes from the prefill's logits). A loop that scheduled the
  // waiter before the holder finished, or stepped idle, would count differently.
  EXPECT_EQ(s.steps, uint64_t(1 + (n_holder - 1) + 1));
  EXPECT_EQ(s.steps_decode, uint64_t(n_holder - 1));

  // The boundary changes no output: the same request with room to spare samples the same token.
  Engine roomy(pool_config(2 * kPool));
  const std::vector<GenerateResult> ref = roomy.generate({whole_pool_prompt()}, {greedy(1)});
  ASSERT_EQ(ref.size(), 1u);
  EXPECT_EQ(ref[0].output_ids, waiter_ids);
}

TEST(EngineStall, AWholePoolPromptThatWouldDecodeIsRefusedNamingMaxNewTokens) {
  Engine engine(pool_config(kPool));
  // max_new_tokens 2: the second token is sampled after feeding the first back, so the
  // request needs kPool + 1 KV slots: validate refuses it (400) instead of queueing a
  // request admission could never take.
  try {
    engine.submit(whole_pool_prompt(), greedy(2), [](const RequestOutput&) {});
    ADD_FAILURE() << "a whole-pool prompt with max_new_tokens 2 was accepted";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_request) << e.what();
    EXPECT_EQ(e.param(), "max_new_tokens");
    const std::string what = e.what();
    EXPECT_NE(what.find(std::to_string(kPool + 1) + " KV slots"), std::string::npos) << what;
    EXPECT_NE(what.find("the pool has " + std::to_string(kPool)), std::string::npos) << what;
  }
  // Nothing was queued: the boundary request right after it is served.
  const std::vector<GenerateResult> r = engine.generate({whole_pool_prompt()}, {greedy(1)});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].output_ids.size(), 1u);
  EXPECT_EQ(engine.stats().stalled_schedules, 0u);
}

}  // namespace
}  // namespace seam::test
