// Speculative decoding (NGRAM) through the engine on stories260K: the golden greedy ids
// unchanged for k = 1, 4, 8 with graphs on and off, mixed chunks and retractions; seeded
// sampling, logprobs, stop ids, stop strings and max_tokens identical to non-speculative
// runs (cuts land inside accepted runs); the KV pool whole afterwards; the per-request
// opt-out and the batch-size off-switch.
#include <gtest/gtest.h>

#include "golden.h"
#include "speculative_test_util.h"
#include "safetensors_writer.h"

namespace seam::test {
namespace {

// NGRAM finds the stories' repeats: drafts are proposed, some accepted, never more than
// proposed, and the histogram counts every verify row.
void expect_speculated(const nlohmann::json& stats, int k) {
  EXPECT_GT(stats["speculative_verify_rows"], 0);
  EXPECT_GT(stats["speculative_accepted_tokens"], 0);
  EXPECT_LE(stats["speculative_accepted_tokens"], stats["speculative_proposed_tokens"]);
  uint64_t rows = 0;
  for (auto& [len, n] : stats["speculative_accept_length"].items()) {
    EXPECT_LE(std::stoi(len), k);
    rows += n.get<uint64_t>();
  }
  EXPECT_EQ(rows, stats["speculative_verify_rows"].get<uint64_t>());
}

class NgramGolden : public ::testing::TestWithParam<std::tuple<int, bool>> {};
TEST_P(NgramGolden, IdsUnchanged) {
  const int k = std::get<0>(GetParam());
  const bool graphs = std::get<1>(GetParam());
  auto cfg = ngram_config(k);
  cfg.disable_cuda_graph = !graphs;
  auto stats = run_golden(cfg);
  expect_speculated(stats, k);
  if (graphs) {
    // Verify batches are decode keys captured at start-up: replayed, never captured later.
    EXPECT_GT(stats["verify_steps_decode_graph"], 0);
    EXPECT_EQ(stats["verify_steps_eager"], 0);
  } else {
    EXPECT_EQ(stats["verify_steps_decode_graph"], 0);
    EXPECT_GT(stats["verify_steps_eager"], 0);
    EXPECT_EQ(stats["eager_by_reason"]["disabled"], stats["eager_steps"]);
  }
}
INSTANTIATE_TEST_SUITE_P(Speculative, NgramGolden, ::testing::Combine(::testing::Values(1, 4, 8), ::testing::Bool()));

// Verify rows ride beside prefill chunks in MIXED steps, under the piecewise graphs.
class NgramMixed : public ::testing::TestWithParam<std::tuple<int, bool>> {};
TEST_P(NgramMixed, IdsUnchanged) {
  const int k = std::get<0>(GetParam());
  auto cfg = ngram_config(k);
  cfg.enable_mixed_chunk = true;
  cfg.chunked_prefill_size = 16;
  cfg.disable_cuda_graph = !std::get<1>(GetParam());
  auto stats = run_golden(cfg);
  expect_speculated(stats, k);
  EXPECT_GT(stats["mixed"], 0);
  if (std::get<1>(GetParam())) EXPECT_GT(stats["verify_steps_piecewise"], 0);
}
INSTANTIATE_TEST_SUITE_P(Speculative, NgramMixed, ::testing::Combine(::testing::Values(1, 4, 8), ::testing::Bool()));

TEST(Speculative, SmallKvPoolRetracts) {
  for (bool radix : {true, false}) {
    auto cfg = ngram_config(4);
    cfg.max_total_tokens = 520;  // the longest case needs 512; all together need far more
    cfg.enable_mixed_chunk = true;
    cfg.chunked_prefill_size = 64;
    cfg.disable_radix_cache = !radix;
    auto stats = run_golden(cfg);
    EXPECT_GT(stats["retractions"], 0);
    expect_speculated(stats, 4);
    if (!radix) EXPECT_EQ(stats["kv_free_tokens"], stats["kv_pool_tokens"]);
  }
}

// Runs one request per params on engines with and without NGRAM; the outputs must match.
struct Outcome {
  std::vector<int32_t> ids;
  std::string text;
  FinishReason finish;
  std::vector<TokenLogprob> logprobs;
};
std::vector<Outcome> run_each(const EngineConfig& cfg, const std::vector<std::vector<int32_t>>& prompts,
                              const std::vector<SamplingParams>& params, nlohmann::json* stats = nullptr) {
  Engine engine(cfg);
  auto results = engine.generate(prompts, params);
  std::vector<Outcome> out;
  for (auto& r : results) out.push_back({r.output_ids, r.text, r.finish_reason, r.logprobs});
  engine.wait_idle();
  auto s = engine.stats().to_json();
  expect_kv_whole(s);
  if (stats) *stats = s;
  return out;
}

void expect_same(const std::vector<Outcome>& a, const std::vector<Outcome>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].ids, b[i].ids) << "request " << i;
    EXPECT_EQ(a[i].text, b[i].text) << "request " << i;
    EXPECT_EQ(a[i].finish, b[i].finish) << "request " << i;
    ASSERT_EQ(a[i].logprobs.size(), b[i].logprobs.size()) << "request " << i;
    for (size_t t = 0; t < a[i].logprobs.size(); ++t) {
      EXPECT_EQ(a[i].logprobs[t].id, b[i].logprobs[t].id);
      EXPECT_FLOAT_EQ(a[i].logprobs[t].logprob, b[i].logprobs[t].logprob);
      EXPECT_EQ(a[i].logprobs[t].top.size(), b[i].logprobs[t].top.size());
    }
  }
}

TEST(Speculative, SeededSamplingIsTheSameOutput) {
  // At temperature 1 (and with top-k / top-p / min-p) each accepted run is exactly what the
  // plain sampler draws for those (seed, step)s: the outputs are equal, not just alike.
  std::vector<std::vector<int32_t>> prompts;
  std::vector<SamplingParams> params;
  const auto cases = golden_cases();
  for (size_t i = 0; i < 12; ++i) {
    SamplingParams p;
    p.temperature = i % 3 == 0 ? 1.f : 0.7f;
    p.top_k = i % 4 == 1 ? 20 : -1;
    p.top_p = i % 4 == 2 ? 0.9f : 1.f;
    p.min_p = i % 4 == 3 ? 0.05f : 0.f;
    p.seed = 1000 + i;
    p.max_new_tokens = 120;
    p.logprobs = i % 2 ? 3 : -1;
    prompts.push_back(cases[i % cases.size()].prompt_ids);
    params.push_back(p);
  }
  nlohmann::json stats;
  const auto plain = run_each(cpu_engine_config(), prompts, params);
  auto spec_cfg = ngram_config(4);
  spec_cfg.speculative_max_batch_size = 16;  // all 12 verify from the start
  const auto spec = run_each(spec_cfg, prompts, params, &stats);
  expect_same(plain, spec);
  EXPECT_GT(stats["speculative_accepted_tokens"], 0);
}

TEST(Speculative, StopsAndLengthCutInsideAcceptedRuns) {
  // Every cut point of a few golden outputs: max_tokens n, a stop id at n, a stop string
  // ending at n. Accepted runs span several tokens, so many cuts fall inside one.
  const auto cases = golden_cases();
  std::vector<std::vector<int32_t>> prompts;
  std::vector<SamplingParams> params;
  for (size_t c = 0; c < 2; ++c) {
    const GoldenCase& g = cases[c];
    for (int n = 1; n < 40; n += 2) {
      SamplingParams p = golden_params(g);
      p.max_new_tokens = n;
      prompts.push_back(g.prompt_ids), params.push_back(p);
      SamplingParams q = golden_params(g);
      q.stop_token_ids = {g.generated_ids[size_t(n)]};
      prompts.push_back(g.prompt_ids), params.push_back(q);
      SamplingParams s = golden_params(g);
      const size_t at = std::min(g.generated_text.size() - 3, size_t(n) * 3);
      s.stop = {g.generated_text.substr(at, 3)};
      prompts.push_back(g.prompt_ids), params.push_back(s);
    }
  }
  auto cfg = cpu_engine_config();
  cfg.max_running_requests = 8;  // stay under the off-switch most of the time
  auto spec_cfg = ngram_config(8);
  spec_cfg.max_running_requests = 8;
  // Drafts on every step: the cuts must land inside accepted runs, and these two stories'
  // first 40 tokens start with misses that the back-off (speculative_backoff_test) would skip.
  spec_cfg.speculative_disable_backoff = true;
  nlohmann::json stats;
  const auto plain = run_each(cfg, prompts, params);
  const auto spec = run_each(spec_cfg, prompts, params, &stats);
  expect_same(plain, spec);
  EXPECT_GT(stats["speculative_accepted_tokens"], 0);
  for (size_t i = 0; i < plain.size(); i += 3) EXPECT_EQ(plain[i].finish, FinishReason::length);
}

TEST(Speculative, PerRequestOptOut) {
  const auto cases = golden_cases();
  SamplingParams p = golden_params(cases[0]);
  p.disable_speculative = true;
  nlohmann::json stats;
  const auto out = run_each(ngram_config(4), {cases[0].prompt_ids}, {p}, &stats);
  EXPECT_EQ(out[0].ids, cases[0].generated_ids);
  EXPECT_EQ(stats["speculative_verify_rows"], 0);
  EXPECT_EQ(stats["speculative_proposed_tokens"], 0);
}

TEST(Speculative, OffSwitchAboveMaxBatchSize) {
  auto cfg = ngram_config(4);
  cfg.speculative_max_batch_size = 1;
  auto stats = run_golden(cfg);
  EXPECT_GT(stats["speculative_off_steps"], 0);
  EXPECT_GT(stats["speculative_verify_rows"], 0);  // the last request alone speculates
}

// The benchmarks' worst case (random drafts, engine/random_draft_proposer.h) without the
// back-off (--speculative-disable-backoff; with it: speculative_backoff_test): every decode
// step verifies, every verify row carries its full k drafts and almost all are rejected, and
// the ids are still the golden ones (rejection keeps only what the target sampled) with the
// pool whole after.
TEST(Speculative, WorstCaseDraftsKeepTheIds) {
  auto cfg = ngram_config(4);
  cfg.bench_worst_case_drafts = true;
  cfg.speculative_disable_backoff = true;
  cfg.speculative_max_batch_size = 16;  // all 15 cases draft from their first decode step
  cfg.disable_cuda_graph = true;        // (the paths are NgramGolden's; no captures of 80-row keys)
  auto stats = run_golden(cfg);
  const uint64_t rows = stats["speculative_verify_rows"], proposed = stats["speculative_proposed_tokens"],
                 accepted = stats["speculative_accepted_tokens"];
  uint64_t n_decode_steps = 0;  // per case: every output token after the first
  const auto cases = golden_cases();
  for (const auto& c : cases) n_decode_steps += c.generated_ids.size() - 1;
  // Each case's last decode step has no room for drafts; an accepted draft saves a step.
  EXPECT_GE(rows + cases.size() + accepted, n_decode_steps);
  // Full rows but for the last three of a case (room 3, 2, 1 before max_tokens).
  EXPECT_GE(proposed + 6 * cases.size(), 4 * rows);
  EXPECT_LT(accepted * 20, proposed);
  EXPECT_EQ(stats["speculative_backoff_steps"], 0);
}

TEST(Speculative, ManyRequestsLeakNoSlots) {
  auto cfg = ngram_config(8);
  cfg.disable_radix_cache = true;
  Engine engine(cfg);
  const auto cases = golden_cases();
  for (int round = 0; round < 3; ++round)
    for (const auto& c : cases) {
      SamplingParams p = golden_params(c);
      p.max_new_tokens = 7 + round * 13;  // cuts at many places of accepted runs
      auto r = engine.generate({c.prompt_ids}, {p});
      EXPECT_EQ(r[0].output_ids,
                std::vector<int32_t>(c.generated_ids.begin(),
                                     c.generated_ids.begin() + std::min<size_t>(c.generated_ids.size(), size_t(p.max_new_tokens))));
    }
  engine.wait_idle();
  auto stats = engine.stats().to_json();
  EXPECT_EQ(stats["kv_free_tokens"], stats["kv_pool_tokens"]);
  EXPECT_GT(stats["speculative_accepted_tokens"], 0);
}

}  // namespace
}  // namespace seam::test

namespace seam::test {
namespace {

// STANDALONE: stories260K drafting for itself decodes greedily exactly as the target does,
// so every draft is accepted; the ids stay the golden ones, with graphs on and off, mixed
// chunks, and a KV pool small enough to retract.
EngineConfig standalone_config(int k) {
  EngineConfig cfg = cpu_engine_config();
  cfg.speculative_algorithm = "STANDALONE";
  cfg.speculative_draft_model_path = stories_dir();
  cfg.speculative_num_draft_tokens = k;
  return cfg;
}

class StandaloneGolden : public ::testing::TestWithParam<std::tuple<int, bool, bool>> {};
TEST_P(StandaloneGolden, SelfDraftAcceptsEverything) {
  const int k = std::get<0>(GetParam());
  auto cfg = standalone_config(k);
  cfg.disable_cuda_graph = !std::get<1>(GetParam());
  if (std::get<2>(GetParam())) {
    cfg.enable_mixed_chunk = true;
    cfg.chunked_prefill_size = 16;
  }
  auto stats = run_golden(cfg);
  EXPECT_GT(stats["speculative_verify_rows"], 0);
  EXPECT_GT(stats["speculative_proposed_tokens"], 0);
  EXPECT_EQ(stats["speculative_accepted_tokens"], stats["speculative_proposed_tokens"]);
  if (std::get<1>(GetParam())) EXPECT_GT(stats["verify_steps_decode_graph"], 0);
}
INSTANTIATE_TEST_SUITE_P(Speculative, StandaloneGolden,
                         ::testing::Combine(::testing::Values(1, 4), ::testing::Bool(), ::testing::Bool()));

TEST(Speculative, StandaloneSmallKvPoolRetracts) {
  auto cfg = standalone_config(4);
  cfg.max_total_tokens = 520;
  cfg.enable_mixed_chunk = true;
  cfg.chunked_prefill_size = 64;
  auto stats = run_golden(cfg);
  EXPECT_GT(stats["retractions"], 0);
  EXPECT_EQ(stats["speculative_accepted_tokens"], stats["speculative_proposed_tokens"]);
}

TEST(Speculative, StandaloneSeededSamplingIsTheSameOutput) {
  const auto cases = golden_cases();
  std::vector<std::vector<int32_t>> prompts;
  std::vector<SamplingParams> params;
  for (size_t i = 0; i < 6; ++i) {
    SamplingParams p;
    p.temperature = 0.8f;
    p.seed = 77 + i;
    p.max_new_tokens = 60;
    prompts.push_back(cases[i % cases.size()].prompt_ids);
    params.push_back(p);
  }
  nlohmann::json stats;
  const auto plain = run_each(cpu_engine_config(), prompts, params);
  const auto spec = run_each(standalone_config(4), prompts, params, &stats);
  expect_same(plain, spec);
  EXPECT_GT(stats["speculative_accepted_tokens"], 0);
}

}  // namespace
}  // namespace seam::test

namespace seam::test {
namespace {

// A different tiny draft of the same vocabulary (2 layers of 16, deterministic weights that
// know nothing of stories): it is mostly wrong, and the ids stay the golden ones.
TEST(Speculative, StandaloneDifferentDraftKeepsTheIds) {
  const std::string dir = make_temp_dir("spec_draft");
  nlohmann::json config = tiny_config_json();
  config["vocab_size"] = 512;
  config["max_position_embeddings"] = 512;
  write_config(dir, config);
  write_safetensors(dir + "/model.safetensors", model_tensors(load_model_config(dir), "F32"));
  for (bool graphs : {true, false}) {
    auto cfg = standalone_config(4);
    cfg.speculative_draft_model_path = dir;
    cfg.disable_cuda_graph = !graphs;
    auto stats = run_golden(cfg);
    EXPECT_GT(stats["speculative_proposed_tokens"], 0);
    EXPECT_LT(stats["speculative_accepted_tokens"], stats["speculative_proposed_tokens"]);
  }
}

}  // namespace
}  // namespace seam::test
