// The per-request back-off of speculative decoding (engine/draft_backoff.h): the schedule
// itself (1, 2, 4, ... skipped steps after verify rows that accepted nothing, capped, reset by
// an accepted draft); through the engine on stories260K, the golden greedy ids unchanged while
// requests back off (NGRAM and STANDALONE, graphs on and off, mixed chunks); speculation's worst
// case (random drafts) verifying in a logarithmic number of steps; a request that accepts again
// drafting on every step again (--speculative-disable-backoff: speculative_decoding_test's
// WorstCaseDraftsKeepTheIds).
#include <gtest/gtest.h>

#include <cmath>
#include <future>
#include <string>

#include "engine/draft_backoff.h"
#include "engine/engine_setup.h"
#include "golden.h"
#include "speculative_test_util.h"
#include "safetensors_writer.h"

namespace seam::test {
namespace {

// The most verify rows the back-off lets one request make in n_steps decode steps when nothing
// is accepted: the i-th comes at step 2^i + i - 1 while the skip doubles (so at most
// floor(log2(n + 1)) + 1 of them), then each takes cap + 1 steps (at most ceil(n / (cap + 1))).
uint64_t worst_case_rows_bound(uint64_t n_steps, uint64_t cap) {
  return uint64_t(std::floor(std::log2(double(n_steps + 1)))) + 1 + (n_steps + cap) / (cap + 1);
}

TEST(DraftBackoff, DoublesUpToTheCapAndResetsOnAccept) {
  DraftBackoff b(8);
  EXPECT_FALSE(b.skip_step());  // no verify yet: drafts every step
  EXPECT_FALSE(b.skip_step());
  for (int expected : {1, 2, 4, 8, 8, 8}) {
    b.on_verify(0);
    EXPECT_EQ(b.current_skip(), expected);
    for (int s = 0; s < expected; ++s) EXPECT_TRUE(b.skip_step()) << "skip " << s << " of " << expected;
    EXPECT_FALSE(b.skip_step());  // the back-off is over: this step drafts
  }
  b.on_verify(2);  // accepted: back to drafting every step, and the next miss skips 1 again
  EXPECT_EQ(b.current_skip(), 0);
  EXPECT_FALSE(b.skip_step());
  b.on_verify(0);
  EXPECT_EQ(b.current_skip(), 1);
  EXPECT_TRUE(b.skip_step());
  EXPECT_FALSE(b.skip_step());
}

TEST(DraftBackoff, AcceptedDraftCancelsTheRestOfTheSkip) {
  DraftBackoff b(64);
  for (int i = 0; i < 4; ++i) b.on_verify(0);
  EXPECT_EQ(b.skip_left(), 8);
  b.on_verify(1);
  EXPECT_EQ(b.skip_left(), 0);
  EXPECT_FALSE(b.skip_step());
}

TEST(DraftBackoff, OffNeverSkips) {
  DraftBackoff b(0);
  for (int i = 0; i < 10; ++i) {
    b.on_verify(0);
    EXPECT_FALSE(b.skip_step());
  }
}

// Steps the schedule of a request that never accepts, and checks the bound the engine tests use.
TEST(DraftBackoff, WorstCaseRowsWithinTheBound) {
  for (int cap : {1, 8, 64}) {
    DraftBackoff b(cap);
    uint64_t n_rows = 0;
    for (uint64_t step = 1; step <= 2000; ++step) {
      if (!b.skip_step()) ++n_rows, b.on_verify(0);
      EXPECT_LE(n_rows, worst_case_rows_bound(step, uint64_t(cap))) << "cap " << cap << " step " << step;
    }
    // In the long run one row in cap + 1 steps.
    EXPECT_NEAR(double(n_rows), 2000.0 / (cap + 1), std::log2(2000.0) + 1);
  }
}

// The golden ids stay while requests back off (a backed-off step is a plain decode row).
class BackoffGolden : public ::testing::TestWithParam<std::tuple<bool, bool>> {
 protected:
  // The parameters: graphs on/off, mixed chunks (chunk 16) on/off.
  void apply_param(EngineConfig& cfg) const {
    cfg.disable_cuda_graph = !std::get<0>(GetParam());
    if (std::get<1>(GetParam())) {
      cfg.enable_mixed_chunk = true;
      cfg.chunked_prefill_size = 16;
    }
  }
};
TEST_P(BackoffGolden, NgramIdsUnchanged) {
  auto cfg = ngram_config(4);
  apply_param(cfg);
  const auto stats = run_golden(cfg);
  EXPECT_GT(stats["speculative_backoff_steps"], 0);
  EXPECT_GT(stats["speculative_accepted_tokens"], 0);
}

// A different tiny draft of the same vocabulary (deterministic weights that know nothing of
// stories) is mostly wrong: requests back off, and the draft model's KV catches up the tokens
// of the skipped steps at the next proposal (a desync would change nothing in the ids, the
// target verifies every draft, but it would show as a bookkeeping assert or a leaked slot).
TEST_P(BackoffGolden, StandaloneIdsUnchanged) {
  const std::string dir = make_temp_dir("backoff_draft");
  nlohmann::json config = tiny_config_json();
  config["vocab_size"] = 512;
  config["max_position_embeddings"] = 512;
  write_config(dir, config);
  write_safetensors(dir + "/model.safetensors", model_tensors(load_model_config(dir), "F32"));
  auto cfg = cpu_engine_config();
  cfg.speculative_algorithm = "STANDALONE";
  cfg.speculative_draft_model_path = dir;
  cfg.speculative_num_draft_tokens = 4;
  apply_param(cfg);
  const auto stats = run_golden(cfg);
  EXPECT_GT(stats["speculative_backoff_steps"], 0);
  EXPECT_GT(stats["speculative_verify_rows"], 0);
}
INSTANTIATE_TEST_SUITE_P(Speculative, BackoffGolden, ::testing::Combine(::testing::Bool(), ::testing::Bool()));

// Speculation's worst case (random drafts, engine/random_draft_proposer.h) with the back-off:
// each request verifies in a logarithmic number of its decode steps (plus one in 65 past the
// cap), every other step is a counted back-off step, and the ids are the golden ones.
TEST(SpeculativeBackoff, WorstCaseVerifiesRarely) {
  auto cfg = ngram_config(4);
  cfg.bench_worst_case_drafts = true;
  cfg.speculative_max_batch_size = 16;  // all 15 cases may draft from their first decode step
  cfg.disable_cuda_graph = true;
  const auto stats = run_golden(cfg);
  const uint64_t rows = stats["speculative_verify_rows"], accepted = stats["speculative_accepted_tokens"],
                 backoff = stats["speculative_backoff_steps"];
  const uint64_t cap = uint64_t(default_speculative_max_backoff_steps);
  const auto cases = golden_cases();
  uint64_t n_decode_steps = 0, bound = 0, max_steps = 0;
  for (const auto& c : cases) {
    const uint64_t n = c.generated_ids.size() - 1;  // every output token after the first
    n_decode_steps += n;
    bound += worst_case_rows_bound(n, cap);
    max_steps = std::max(max_steps, n);
  }
  // A row that accepted a (random) draft by chance restarts its request's schedule.
  uint64_t rows_accepting = rows;
  if (stats["speculative_accept_length"].contains("0")) rows_accepting -= stats["speculative_accept_length"]["0"].get<uint64_t>();
  bound += rows_accepting * worst_case_rows_bound(max_steps, cap);
  EXPECT_GT(rows, 0u);
  EXPECT_LE(rows, bound);
  EXPECT_LT(rows * 4, n_decode_steps);  // the bound is a small fraction of the steps
  // Every decode step either verifies or backs off, but each case's last (no room for drafts).
  EXPECT_GE(rows + backoff + cases.size() + accepted, n_decode_steps);
  EXPECT_LE(rows + backoff, n_decode_steps);
}

// One request alone, step by step: the stream callback runs on the engine thread once per
// step, before that step's stats are published (with the output overlap off), so the snapshot it
// reads holds every step before it. The differences give each step's event: 'V' a verify row that accepted nothing, 'A' one that
// accepted drafts, 'B' a back-off step, '.' a plain row (no n-gram match, or no room).
std::string step_events(Engine& engine, const std::vector<int32_t>& prompt, const SamplingParams& p) {
  std::vector<EngineStats> seen;
  std::promise<void> done;
  engine.submit(prompt, p, [&](const RequestOutput& out) {
    if (!out.new_ids.empty()) seen.push_back(engine.stats());
    if (out.finished) done.set_value();
  });
  done.get_future().wait();
  engine.wait_idle();
  seen.push_back(engine.stats());
  std::string events;
  for (size_t s = 1; s + 1 < seen.size(); ++s) {  // seen[s + 1] - seen[s]: decode step s
    const EngineStats &a = seen[s], &b = seen[s + 1];
    const uint64_t rows = b.speculative_verify_rows - a.speculative_verify_rows,
                   backoff = b.speculative_backoff_steps - a.speculative_backoff_steps,
                   accepted = b.speculative_accepted_tokens - a.speculative_accepted_tokens;
    EXPECT_LE(rows + backoff, 1u) << "one request, one row per step";
    events += rows ? (accepted ? 'A' : 'V') : backoff ? 'B' : '.';
  }
  return events;
}

// The rule, checked on each step of real NGRAM requests: after the j-th verify row in a row that
// accepted nothing (counted since the last accepting one), the next min(2^(j-1), cap) steps back
// off and then the request may draft again; an accepting row resets the count, so that a request
// whose text turns repetitive drafts every step again. Over the golden prompts run on past their
// end (ignore_eos: stories260K's text comes back to its own phrases), some request must back off,
// accept again, and miss again with a skip of 1: the reset seen through the engine.
TEST(SpeculativeBackoff, AcceptedDraftsResetTheSchedule) {
  const int cap = default_speculative_max_backoff_steps;
  // step_events reads the stats from the stream callback, so the callback must run at its own
  // step's end, before that step's stats are published: outputs handed over between steps. With
  // the output overlap (the default) a step's outputs reach their callback inside the next step,
  // and the request's last one after it, which shifts the differences by a step at the end.
  EngineConfig cfg = ngram_config(4);
  cfg.enable_output_overlap = false;
  Engine engine(cfg);
  int n_resets_seen = 0, n_backoff = 0, n_accepting = 0;
  for (const auto& c : golden_cases()) {
    SamplingParams p = golden_params(c);
    p.max_new_tokens = 200;
    p.ignore_eos = true;
    const std::string ev = step_events(engine, c.prompt_ids, p);
    SCOPED_TRACE(c.id + ": " + ev);
    int n_misses = 0;         // all-rejected verify rows since the last accepting one
    bool backed_off = false;  // the request has backed off before the last accepting row
    size_t s = 0;
    while (s < ev.size()) {
      const char e = ev[s++];
      ASSERT_NE(e, 'B') << "a back-off step outside a back-off window, step " << s - 1;
      if (e == 'A') {
        backed_off |= n_misses > 0;
        n_misses = 0;
        ++n_accepting;
      }
      if (e != 'V') continue;
      if (backed_off && n_misses == 0) ++n_resets_seen;  // missed again after accepting again
      ++n_misses;
      const int skip = std::min(1 << std::min(n_misses - 1, 20), cap);
      // (The request's last step has no room for drafts: '.', whatever the back-off.)
      for (int k = 0; k < skip && s + 1 < ev.size(); ++k, ++s) {
        ASSERT_EQ(ev[s], 'B') << "step " << s << ": back-off " << k << " of " << skip;
        ++n_backoff;
      }
    }
  }
  EXPECT_GT(n_backoff, 0);
  EXPECT_GT(n_accepting, 0);
  EXPECT_GT(n_resets_seen, 0);
}

}  // namespace
}  // namespace seam::test
