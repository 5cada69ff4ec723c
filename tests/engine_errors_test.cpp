// Error kinds at the engine's face (api/error_kind.h): a request that can never
// be served is invalid_request naming its field; a full queue is overloaded
// (503 + Retry-After); a broken invariant is internal (500); a device fault
// kills the engine: every in-flight and later request fails with engine_dead
// ("engine is dead: <cause>") and the loop never steps again. Faults are
// injected into the cpu backend (CpuBackend::fail_at_step, SEAM_CPU_FAULT_AT_STEP).
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "api/error_kind.h"
#include "backend/cpu/cpu_backend.h"
#include "engine/engine.h"
#include "engine/engine_bench_access.h"
#include "runtime/model_runner.h"
#include "golden.h"
#include "server/api_error.h"

namespace seam::test {
namespace {

// The kind (and param) a call throws; fails the test when it throws nothing.
template <typename F>
RequestError thrown_by(F&& f) {
  try {
    f();
  } catch (const RequestError& e) {
    return e;
  }
  ADD_FAILURE() << "no RequestError thrown";
  return RequestError(ErrorKind::none, "");
}

std::vector<EngineRequest> group_of(int n, const std::vector<int32_t>& prompt, int max_new_tokens) {
  std::vector<EngineRequest> g(static_cast<size_t>(n));
  for (EngineRequest& q : g) {
    q.prompt_ids = prompt;
    q.params.temperature = 0.f;
    q.params.max_new_tokens = max_new_tokens;
    q.callback = [](const RequestOutput&) {};
  }
  return g;
}

TEST(EngineErrors, InvalidRequestsNameTheirField) {
  EngineConfig cfg = cpu_engine_config();
  cfg.max_total_tokens = 64;  // a small pool: a long request can never fit
  Engine engine(cfg);
  auto cb = [](const RequestOutput&) {};
  SamplingParams p;
  auto expect_invalid = [&](std::vector<int32_t> ids, const SamplingParams& sp, const std::string& param) {
    const RequestError e = thrown_by([&] { engine.submit(ids, sp, cb); });
    EXPECT_EQ(e.kind(), ErrorKind::invalid_request) << e.what();
    EXPECT_EQ(e.param(), param) << e.what();
    EXPECT_EQ(http_status(e.kind()), 400);
  };
  expect_invalid({}, p, "prompt");
  expect_invalid({1, 99999}, p, "prompt");
  expect_invalid(std::vector<int32_t>(600, 5), p, "prompt");  // over the 512 context
  SamplingParams bad = p;
  bad.top_p = 0;
  expect_invalid({1}, bad, "top_p");
  bad = p;
  bad.max_new_tokens = 100;  // 10 + 100 - 1 KV slots > the 64-token pool
  expect_invalid(std::vector<int32_t>(10, 5), bad, "max_new_tokens");
  // Nothing was queued: the engine still serves.
  SamplingParams ok = p;
  ok.temperature = 0.f;
  ok.max_new_tokens = 3;
  EXPECT_EQ(engine.generate({{1, 2, 3}}, {ok})[0].output_ids.size(), 3u);
}

TEST(EngineErrors, FullQueueIsOverloadedAndAGroupOverTheLimitIsInvalid) {
  EngineConfig cfg = cpu_engine_config();
  cfg.max_queued_requests = 2;
  Engine engine(cfg);
  // One request holds the engine thread in its first callback, so it stays in flight.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> started;
  bool first = true;
  SamplingParams p;
  p.temperature = 0.f;
  p.max_new_tokens = 4;
  engine.submit({1, 2, 3}, p, [&](const RequestOutput&) {
    if (first) {
      first = false;
      started.set_value();
      released.wait();
    }
  });
  started.get_future().wait();
  // 1 in flight + 2 > 2: not now, come back later.
  const RequestError busy = thrown_by([&] { engine.submit_group(group_of(2, {1, 2}, 2)); });
  EXPECT_EQ(busy.kind(), ErrorKind::overloaded) << busy.what();
  EXPECT_EQ(http_status(busy.kind()), 503);
  EXPECT_GT(busy.retry_after_s(), 0);
  const ApiError api = from_exception(busy);
  EXPECT_EQ(api.status(), 503);
  EXPECT_EQ(api.retry_after_s(), busy.retry_after_s());
  // 3 at once can never be admitted under a limit of 2: the request's own fault.
  const RequestError never = thrown_by([&] { engine.submit_group(group_of(3, {1, 2}, 2)); });
  EXPECT_EQ(never.kind(), ErrorKind::invalid_request) << never.what();
  EXPECT_EQ(never.param(), "n");
  // 1 + 1 <= 2 fits.
  std::atomic<int> n_done{0};
  auto fits = group_of(1, {1, 2}, 2);
  fits[0].callback = [&](const RequestOutput& o) {
    if (o.finished) ++n_done;
  };
  EXPECT_EQ(engine.submit_group(std::move(fits)).size(), 1u);
  release.set_value();
  engine.wait_idle();
  EXPECT_EQ(n_done.load(), 1);
  // Refused groups left nothing behind: the limit's room is back.
  EXPECT_EQ(engine.submit_group(group_of(2, {1, 2}, 1)).size(), 2u);
  engine.wait_idle();
}

TEST(EngineErrors, KindsOfExceptionsAndTheirStatus) {
  try {
    SEAM_ASSERT(1 + 1 == 3, "arithmetic");
    ADD_FAILURE() << "SEAM_ASSERT did not throw";
  } catch (const InternalError& e) {
    EXPECT_EQ(error_kind_of(e), ErrorKind::internal);
    const ApiError api = from_exception(e);
    EXPECT_EQ(api.status(), 500);
    EXPECT_NE(std::string(api.what()).find("internal invariant"), std::string::npos) << api.what();
  }
  const DeviceError device("cudaErrorIllegalAddress");
  EXPECT_EQ(error_kind_of(device), ErrorKind::engine_dead);
  EXPECT_EQ(from_exception(device).status(), 500);
  EXPECT_EQ(std::string(from_exception(device).what()), "engine is dead: cudaErrorIllegalAddress");
  EXPECT_EQ(error_kind_of(Error("bad flag")), ErrorKind::invalid_request);
  EXPECT_EQ(from_exception(Error("bad flag")).status(), 400);
  EXPECT_EQ(http_status(ErrorKind::not_found), 404);
  EXPECT_EQ(error_kind_of(std::runtime_error("?")), ErrorKind::internal);
}

// Builds an engine whose cpu backend faults at `step` (the environment variable
// is read when the backend is made).
std::unique_ptr<Engine> engine_faulting_at(int step) {
  setenv("SEAM_CPU_FAULT_AT_STEP", std::to_string(step).c_str(), 1);
  auto engine = std::make_unique<Engine>(cpu_engine_config());
  unsetenv("SEAM_CPU_FAULT_AT_STEP");
  return engine;
}

TEST(EngineErrors, DeviceFaultKillsTheEngine) {
  auto engine = engine_faulting_at(4);
  EXPECT_FALSE(engine->dead());
  struct Seen {
    std::mutex mu;
    std::condition_variable cv;
    int n_finished = 0;
    std::vector<RequestOutput> finals;
  } seen;
  SamplingParams p;
  p.temperature = 0.f;
  p.max_new_tokens = 50;
  p.ignore_eos = true;
  auto cb = [&](const RequestOutput& o) {
    if (!o.finished) return;
    std::lock_guard<std::mutex> lock(seen.mu);
    seen.finals.push_back(o);
    ++seen.n_finished;
    seen.cv.notify_all();
  };
  std::vector<EngineRequest> group = group_of(3, {1, 2, 3, 4}, 50);
  for (EngineRequest& q : group) q.callback = cb;
  engine->submit_group(std::move(group));
  {
    std::unique_lock<std::mutex> lock(seen.mu);
    ASSERT_TRUE(seen.cv.wait_for(lock, std::chrono::seconds(60), [&] { return seen.n_finished == 3; }));
  }
  // Every in-flight request failed with the cause.
  for (const RequestOutput& o : seen.finals) {
    EXPECT_EQ(o.error_kind, ErrorKind::engine_dead);
    EXPECT_EQ(o.error.rfind("engine is dead: ", 0), 0u) << o.error;
    EXPECT_NE(o.error.find("injected device fault at step 4"), std::string::npos) << o.error;
    EXPECT_LT(o.n_output_tokens, 50);
  }
  ASSERT_TRUE(engine->dead());
  EXPECT_NE(engine->dead_cause()->find("injected device fault"), std::string::npos);
  // Later requests are refused with the same cause.
  const RequestError later = thrown_by([&] { engine->submit({1, 2, 3}, p, cb); });
  EXPECT_EQ(later.kind(), ErrorKind::engine_dead);
  EXPECT_EQ(std::string(later.what()).rfind("engine is dead: ", 0), 0u) << later.what();
  // The loop stepped no further: three steps ran, the fourth faulted.
  engine->wait_idle();
  const uint64_t steps = engine->stats().steps;
  EXPECT_EQ(steps, 3u);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(engine->stats().steps, steps);
}

}  // namespace
}  // namespace seam::test

namespace seam::test {
namespace {

TEST(EngineErrors, BrokenInvariantFailsTheStepsRequestsAndTheEngineGoesOn) {
  Engine engine(cpu_engine_config());
  auto& backend = dynamic_cast<CpuBackend&>(EngineBenchAccess::runner(engine).backend());
  backend.fail_at_step(backend.n_steps() + 2, CpuBackend::Fault::internal);
  std::mutex mu;
  std::condition_variable cv;
  std::optional<RequestOutput> last;
  SamplingParams p;
  p.temperature = 0.f;
  p.max_new_tokens = 20;
  p.ignore_eos = true;
  engine.submit({1, 2, 3, 4}, p, [&](const RequestOutput& o) {
    if (!o.finished) return;
    std::lock_guard<std::mutex> lock(mu);
    last = o;
    cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return last.has_value(); }));
  }
  EXPECT_EQ(last->error_kind, ErrorKind::internal);
  EXPECT_NE(last->error.find("injected internal error at step"), std::string::npos) << last->error;
  EXPECT_EQ(last->n_output_tokens, 1);  // the prefill's token; the next step failed
  // Not fatal: the engine serves the next request in full.
  EXPECT_FALSE(engine.dead());
  p.max_new_tokens = 5;
  const GenerateResult r = engine.generate({{1, 2, 3, 4}}, {p})[0];
  EXPECT_EQ(r.output_ids.size(), 5u);
  EXPECT_EQ(r.finish_reason, FinishReason::length);
}

}  // namespace
}  // namespace seam::test
