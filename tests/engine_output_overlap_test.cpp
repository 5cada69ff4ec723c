// --enable-output-overlap (EngineConfig::enable_output_overlap): each step's outputs are queued
// and handed to their callbacks while the device runs the next step (engine_core.h, deliver).
// On the CPU backend the step has finished by then, so these tests hold what must not change:
// every golden id, each request's outputs in order with exactly one finished output and it last,
// the streamed text equal to the final text, stop strings, aborts and n > 1 groups, and a
// waiter of wait_idle() finding every final callback run; and the handoff time is counted.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "golden.h"

namespace seam::test {
namespace {

EngineConfig overlap_config() {
  EngineConfig cfg = cpu_engine_config();
  cfg.enable_output_overlap = true;
  return cfg;
}

// What a stream delivered to one request's callback, checked as it arrives.
struct Stream {
  std::mutex mu;
  std::vector<int32_t> ids;
  std::string text;
  int n_outputs = 0, n_finished = 0, last_n_output_tokens = -1;
  bool output_after_finish = false, tokens_went_back = false;
  FinishReason finish = FinishReason::none;

  void on(const RequestOutput& o) {
    std::lock_guard<std::mutex> lock(mu);
    if (n_finished > 0) output_after_finish = true;
    ++n_outputs;
    ids.insert(ids.end(), o.new_ids.begin(), o.new_ids.end());
    text += o.new_text;
    if (o.n_output_tokens < last_n_output_tokens) tokens_went_back = true;
    last_n_output_tokens = o.n_output_tokens;
    if (o.finished) ++n_finished, finish = o.finish_reason;
  }
};

TEST(EngineOutputOverlap, GoldenIdsAtOnceAndMixedChunks) {
  {
    Engine engine(overlap_config());
    expect_golden_outputs(engine, golden_cases());
  }
  EngineConfig cfg = overlap_config();
  cfg.enable_mixed_chunk = true;
  cfg.chunked_prefill_size = 16;
  Engine engine(cfg);
  expect_golden_outputs(engine, golden_cases());
  engine.wait_idle();
  const auto stats = engine.stats().to_json();
  EXPECT_GT(stats["mixed"], 0);
  EXPECT_EQ(stats["running_requests"], 0);
}

TEST(EngineOutputOverlap, EachStreamInOrderAndFinishedLast) {
  EngineConfig cfg = overlap_config();
  cfg.enable_mixed_chunk = true;
  cfg.chunked_prefill_size = 16;
  Engine engine(cfg);
  const auto cases = golden_cases();
  std::vector<Stream> streams(cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    engine.submit(cases[i].prompt_ids, golden_params(cases[i]), [&, i](const RequestOutput& o) { streams[i].on(o); });
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // arrivals while others decode
  }
  engine.wait_idle();  // every final callback has run once wait_idle returns
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].id);
    Stream& s = streams[i];
    EXPECT_EQ(s.n_finished, 1);
    EXPECT_FALSE(s.output_after_finish);
    EXPECT_FALSE(s.tokens_went_back);
    EXPECT_EQ(s.ids, cases[i].generated_ids);
    EXPECT_EQ(s.text, cases[i].generated_text);
    EXPECT_EQ(s.finish, FinishReason::length);
    EXPECT_GT(s.n_outputs, 1);  // streamed, not one lump
  }
  EXPECT_GT(engine.stats().to_json()["host_handoff_ms_per_step"], 0.0);
}

// A stop string ends a request mid-stream; its text must stop before the string, as without the
// overlap (the same engine path: only the callback's timing moves).
TEST(EngineOutputOverlap, StopStringsAndGroupsAsWithoutIt) {
  const auto cases = golden_cases();
  ASSERT_FALSE(cases.empty());
  const GoldenCase& c = cases[0];
  // A stop string from the middle of the golden text: the output is the text before it.
  const std::string stop = c.generated_text.substr(c.generated_text.size() / 2, 6);
  auto run = [&](bool overlap) {
    EngineConfig cfg = cpu_engine_config();
    cfg.enable_output_overlap = overlap;
    Engine engine(cfg);
    SamplingParams p = golden_params(c);
    p.stop = {stop};
    std::vector<Stream> streams(3);
    std::vector<EngineRequest> group(3);
    for (int i = 0; i < 3; ++i) {
      group[size_t(i)].prompt_ids = c.prompt_ids;
      group[size_t(i)].params = p;
      group[size_t(i)].callback = [&, i](const RequestOutput& o) { streams[size_t(i)].on(o); };
    }
    engine.submit_group(std::move(group));
    engine.wait_idle();
    std::vector<std::string> texts;
    for (Stream& s : streams) {
      EXPECT_EQ(s.n_finished, 1);
      EXPECT_FALSE(s.output_after_finish);
      EXPECT_EQ(s.finish, FinishReason::stop);
      texts.push_back(s.text);
    }
    return texts;
  };
  const auto off = run(false), on = run(true);
  EXPECT_EQ(on, off);
  EXPECT_EQ(on[0], c.generated_text.substr(0, c.generated_text.find(stop)));
}

// Aborts while others decode: an aborted stream ends with one finished/abort output after
// everything it was sent, and the others still produce every golden id.
TEST(EngineOutputOverlap, AbortsEndTheirStreamLast) {
  Engine engine(overlap_config());
  const auto cases = golden_cases();
  ASSERT_GE(cases.size(), 2u);
  std::vector<Stream> streams(cases.size());
  std::vector<uint64_t> ids(cases.size());
  std::atomic<int> first_outputs{0};
  for (size_t i = 0; i < cases.size(); ++i)
    ids[i] = engine.submit(cases[i].prompt_ids, golden_params(cases[i]), [&, i](const RequestOutput& o) {
      if (streams[i].n_outputs == 0) ++first_outputs;
      streams[i].on(o);
    });
  while (first_outputs.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const size_t aborted = 0;  // the first request: aborted after something may have streamed
  engine.abort(ids[aborted]);
  engine.wait_idle();
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].id);
    Stream& s = streams[i];
    EXPECT_EQ(s.n_finished, 1);
    EXPECT_FALSE(s.output_after_finish);
    if (i == aborted) {
      // It may have finished before the abort arrived; otherwise it ends aborted, a prefix.
      if (s.finish == FinishReason::abort)
        EXPECT_EQ(s.ids, std::vector<int32_t>(cases[i].generated_ids.begin(),
                                              cases[i].generated_ids.begin() + std::ptrdiff_t(s.ids.size())));
      else
        EXPECT_EQ(s.ids, cases[i].generated_ids);
    } else {
      EXPECT_EQ(s.ids, cases[i].generated_ids);
    }
  }
}

}  // namespace
}  // namespace seam::test
