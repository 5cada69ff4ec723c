// Sampling determinism by seed and the stop rules, through the engine.
#include <gtest/gtest.h>

#include <set>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/sampling_cpu.h"
#include "golden.h"

namespace seam::test {
namespace {

SamplingParams sampled(uint64_t seed, int n = 40) {
  SamplingParams p;
  p.temperature = 0.9f;
  p.top_p = 0.95f;
  p.top_k = 50;
  p.seed = seed;
  p.max_new_tokens = n;
  p.ignore_eos = true;
  return p;
}

TEST(Sampling, SameSeedSameOutputWhateverTheBatch) {
  Engine engine(cpu_engine_config());
  const std::vector<int32_t> prompt = golden_cases()[0].prompt_ids;
  auto alone = engine.generate({prompt}, {sampled(42)})[0].output_ids;
  // The same request among others with other seeds and prompts.
  std::vector<std::vector<int32_t>> prompts = {golden_cases()[1].prompt_ids, prompt, golden_cases()[2].prompt_ids};
  auto batch = engine.generate(prompts, {sampled(1), sampled(42), sampled(7)});
  EXPECT_EQ(batch[1].output_ids, alone);
  auto other = engine.generate({prompt}, {sampled(43)})[0].output_ids;
  EXPECT_NE(other, alone);  // 40 draws at temperature 0.9: different seeds differ
}

TEST(Sampling, RowRuleMatchesDefinition) {
  std::vector<float> logits = {1.f, 3.f, 2.f, 3.f, -1.f};
  auto l = logits;
  EXPECT_EQ(sample_row(l.data(), 5, 0.f, -1, 1.f, 0.f, 0, 0), 1);  // greedy: ties to the lowest id
  // top_k = 1 always gives the argmax; min_p = 1 keeps only the max-probability tokens.
  for (uint32_t step = 0; step < 50; ++step) {
    l = logits;
    EXPECT_EQ(sample_row(l.data(), 5, 1.f, 1, 1.f, 0.f, 9, step), 1);
    l = logits;
    int id = sample_row(l.data(), 5, 1.f, -1, 1.f, 1.f, 9, step);
    EXPECT_TRUE(id == 1 || id == 3);
    l = logits;
    id = sample_row(l.data(), 5, 1.f, 3, 1.f, 0.f, 9, step);
    EXPECT_TRUE(id == 1 || id == 2 || id == 3);
  }
}

TEST(Stops, MaxNewTokensEosStopIdsAndStrings) {
  Engine engine(cpu_engine_config());
  const GoldenCase c = golden_cases()[0];  // greedy: ", there was a little girl named Lily. ..."
  SamplingParams p;
  p.temperature = 0.f;
  p.max_new_tokens = 10;
  auto r = engine.generate({c.prompt_ids}, {p})[0];
  EXPECT_EQ(r.finish_reason, FinishReason::length);
  EXPECT_EQ(r.output_ids, std::vector<int32_t>(c.generated_ids.begin(), c.generated_ids.begin() + 10));

  // A stop token id: generation ends before it, the id is not in the output.
  p.max_new_tokens = 64;
  p.stop_token_ids = {c.generated_ids[5]};
  r = engine.generate({c.prompt_ids}, {p})[0];
  EXPECT_EQ(r.finish_reason, FinishReason::stop);
  EXPECT_EQ(r.output_ids, std::vector<int32_t>(c.generated_ids.begin(), c.generated_ids.begin() + 5));

  // A stop string: the text ends right before it.
  p.stop_token_ids.clear();
  p.stop = {"girl"};
  r = engine.generate({c.prompt_ids}, {p})[0];
  EXPECT_EQ(r.finish_reason, FinishReason::stop);
  EXPECT_EQ(r.text, c.generated_text.substr(0, c.generated_text.find("girl")));

  // EOS (BOS here: generation_config lists [1, 2]) ends a story unless ignore_eos.
  SamplingParams q;
  q.temperature = 0.f;
  q.max_new_tokens = 400;
  auto with_eos = engine.generate({{1}}, {q})[0];
  q.ignore_eos = true;
  auto without = engine.generate({{1}}, {q})[0];
  if (with_eos.finish_reason == FinishReason::stop) {
    EXPECT_LT(with_eos.output_ids.size(), without.output_ids.size());
    EXPECT_EQ(std::vector<int32_t>(without.output_ids.begin(), without.output_ids.begin() + long(with_eos.output_ids.size())),
              with_eos.output_ids);
    EXPECT_TRUE(without.output_ids[with_eos.output_ids.size()] == 1 || without.output_ids[with_eos.output_ids.size()] == 2);
  } else {
    ADD_FAILURE() << "the empty-prompt story never emitted EOS in 400 tokens";
  }
  EXPECT_EQ(without.finish_reason, FinishReason::length);
}

TEST(Stops, ContextLengthEndsGeneration) {
  auto cfg = cpu_engine_config();
  cfg.context_length = 32;
  Engine engine(cfg);
  SamplingParams p;
  p.temperature = 0.f;
  p.max_new_tokens = 100;
  p.ignore_eos = true;
  auto r = engine.generate({golden_cases()[0].prompt_ids}, {p})[0];
  EXPECT_EQ(r.finish_reason, FinishReason::length);
  EXPECT_EQ(int(r.prompt_ids.size() + r.output_ids.size()), 33);  // the last token is never fed back
}

TEST(BadInput, RejectedWithClearErrors) {
  Engine engine(cpu_engine_config());
  auto cb = [](const RequestOutput&) {};
  SamplingParams p;
  EXPECT_THROW(engine.submit({}, p, cb), Error);
  EXPECT_THROW(engine.submit({1, 99999}, p, cb), Error);
  EXPECT_THROW(engine.submit(std::vector<int32_t>(600, 5), p, cb), Error);  // over the 512 context
  p.temperature = -1;
  EXPECT_THROW(engine.submit({1}, p, cb), Error);
  p = SamplingParams{};
  p.top_p = 0;
  EXPECT_THROW(engine.submit({1}, p, cb), Error);
}

}  // namespace
}  // namespace seam::test

namespace seam::test {
namespace {
TEST(Timing, PerRequestTimesAreOrdered) {
  Engine engine(cpu_engine_config());
  const GoldenCase c = golden_cases()[0];
  auto r = engine.generate({c.prompt_ids, c.prompt_ids}, {golden_params(c), golden_params(c)});
  for (const auto& g : r) {
    ASSERT_EQ(g.token_times_s.size(), g.output_ids.size());
    EXPECT_GE(g.ttft_s, g.queue_time_s);
    EXPECT_GT(g.ttft_s, 0);
    EXPECT_DOUBLE_EQ(g.token_times_s.front(), g.ttft_s);
    for (size_t i = 1; i < g.token_times_s.size(); ++i) EXPECT_GE(g.token_times_s[i], g.token_times_s[i - 1]);
    EXPECT_GE(g.e2e_s, g.token_times_s.back());
  }
}
}  // namespace
}  // namespace seam::test

namespace seam::test {
namespace {
TEST(Penalties, CpuOpAppliesOpenAiAndHfRules) {
  CpuBackend be;
  // Two rows of 5 logits; row 0 penalised, row 1 untouched (no entries).
  std::vector<float> logits = {2.f, -1.f, 0.5f, 3.f, -2.f, 1.f, 1.f, 1.f, 1.f, 1.f};
  std::vector<int32_t> indptr = {0, 3, 3}, tokens = {0, 1, 3}, counts = {2, 0, 1};
  std::vector<float> freq = {0.5f, 0.f}, pres = {0.25f, 0.f}, rep = {2.f, 1.f};
  PenaltyBatch p;
  p.n = 2;
  p.nnz = 3;
  p.indptr = Tensor(indptr.data(), DType::i32, Device::cpu, {3});
  p.tokens = Tensor(tokens.data(), DType::i32, Device::cpu, {3});
  p.out_counts = Tensor(counts.data(), DType::i32, Device::cpu, {3});
  p.frequency = Tensor(freq.data(), DType::f32, Device::cpu, {2});
  p.presence = Tensor(pres.data(), DType::f32, Device::cpu, {2});
  p.repetition = Tensor(rep.data(), DType::f32, Device::cpu, {2});
  be.apply_penalties(Tensor(logits.data(), DType::f32, Device::cpu, {2, 5}), p);
  EXPECT_FLOAT_EQ(logits[0], 2.f / 2.f - 0.5f * 2 - 0.25f);  // output twice: rep, freq*2, presence
  EXPECT_FLOAT_EQ(logits[1], -1.f * 2.f);                    // prompt only: repetition (negative: multiplied)
  EXPECT_FLOAT_EQ(logits[2], 0.5f);                          // never seen
  EXPECT_FLOAT_EQ(logits[3], 3.f / 2.f - 0.5f - 0.25f);
  for (int i = 5; i < 10; ++i) EXPECT_FLOAT_EQ(logits[size_t(i)], 1.f);
}

TEST(Penalties, RepetitionPenaltyChangesGreedyOutput) {
  Engine engine(cpu_engine_config());
  const GoldenCase c = golden_cases()[0];
  SamplingParams p = golden_params(c);
  p.repetition_penalty = 1.5f;
  auto r = engine.generate({c.prompt_ids}, {p})[0];
  EXPECT_NE(r.output_ids, c.generated_ids);  // the golden story repeats tokens ("Lily", ".")
  // Fewer repeated tokens than the unpenalised story.
  auto distinct = [](const std::vector<int32_t>& v) { return std::set<int32_t>(v.begin(), v.end()).size(); };
  EXPECT_GT(distinct(r.output_ids), distinct(c.generated_ids));
}
}  // namespace
}  // namespace seam::test
