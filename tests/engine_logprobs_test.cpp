// Logprobs, prompt logprobs (echo) and logit_bias through the engine on stories260K.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/engine_bench_access.h"
#include "golden.h"
#include "runtime/model_runner.h"

namespace seam::test {
namespace {

SamplingParams greedy(int n, int logprobs) {
  SamplingParams p;
  p.temperature = 0.f;
  p.max_new_tokens = n;
  p.ignore_eos = true;
  p.logprobs = logprobs;
  return p;
}

void expect_same(const std::vector<TokenLogprob>& a, const std::vector<TokenLogprob>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].id, b[i].id) << what << " token " << i;
    if (std::isnan(a[i].logprob))  // a prompt's first token
      EXPECT_TRUE(std::isnan(b[i].logprob)) << what << " token " << i;
    else
      EXPECT_EQ(a[i].logprob, b[i].logprob) << what << " token " << i;
    EXPECT_EQ(a[i].top, b[i].top) << what << " token " << i;
  }
}

TEST(EngineLogprobs, GreedyTokensHaveTheMaxLogprob) {
  Engine engine(cpu_engine_config());
  const GoldenCase c = golden_cases()[0];
  const GenerateResult with = engine.generate({c.prompt_ids}, {greedy(24, 5)})[0];
  const GenerateResult without = engine.generate({c.prompt_ids}, {greedy(24, -1)})[0];
  EXPECT_EQ(with.output_ids, without.output_ids);  // asking changes nothing else
  EXPECT_TRUE(without.logprobs.empty());
  ASSERT_EQ(with.logprobs.size(), with.output_ids.size());
  for (size_t i = 0; i < with.logprobs.size(); ++i) {
    const TokenLogprob& t = with.logprobs[i];
    EXPECT_EQ(t.id, with.output_ids[i]);
    ASSERT_EQ(t.top.size(), 5u);
    EXPECT_EQ(t.top[0].first, t.id) << "greedy picks the most likely token";
    EXPECT_EQ(t.top[0].second, t.logprob);
    EXPECT_LE(t.logprob, 0.f);
    for (size_t j = 1; j < t.top.size(); ++j) EXPECT_GE(t.top[j - 1].second, t.top[j].second);
    double mass = 0;
    for (const auto& [id, lp] : t.top) mass += std::exp(double(lp));
    EXPECT_LE(mass, 1.0 + 1e-5);
  }
}

TEST(EngineLogprobs, SameOnEveryPath) {
  // Graphs on (decode graphs + piecewise), eager, and mixed chunks with small chunks: the
  // logprobs are computed from the same float32 logits on every path, bit for bit on the CPU.
  std::vector<std::vector<int32_t>> prompts;
  std::vector<SamplingParams> params;
  for (int i = 0; i < 4; ++i) {
    prompts.push_back(golden_cases()[size_t(i)].prompt_ids);
    params.push_back(greedy(12, i % 2 == 0 ? 3 : -1));  // rows that ask beside rows that do not
  }
  EngineConfig on = cpu_engine_config();
  EngineConfig eager = cpu_engine_config();
  eager.disable_cuda_graph = true;
  EngineConfig mixed = cpu_engine_config();
  mixed.enable_mixed_chunk = true;
  mixed.chunked_prefill_size = 7;
  std::vector<std::vector<GenerateResult>> runs;
  for (const EngineConfig& cfg : {on, eager, mixed}) {
    Engine engine(cfg);
    runs.push_back(engine.generate(prompts, params));
    EXPECT_EQ(engine.stats().captures_after_seal, 0u);
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(runs[0][i].logprobs.empty(), params[i].logprobs < 0);
    for (size_t r = 1; r < runs.size(); ++r) {
      EXPECT_EQ(runs[r][i].output_ids, runs[0][i].output_ids);
      expect_same(runs[r][i].logprobs, runs[0][i].logprobs, r == 1 ? "eager" : "mixed");
    }
  }
}

TEST(EngineLogprobs, PromptLogprobsEqualTeacherForcing) {
  // The logprob of generated token i equals the prompt logprob of the same token when the
  // prompt + output is fed back as a prompt (echo with max_tokens 0), chunked or not.
  const GoldenCase c = golden_cases()[1];
  Engine engine(cpu_engine_config());
  const GenerateResult gen = engine.generate({c.prompt_ids}, {greedy(10, 2)})[0];
  std::vector<int32_t> forced = c.prompt_ids;
  forced.insert(forced.end(), gen.output_ids.begin(), gen.output_ids.end());
  SamplingParams echo = greedy(0, 2);
  echo.prompt_logprobs = true;
  EngineConfig chunked = cpu_engine_config();
  chunked.chunked_prefill_size = 5;
  Engine small_chunks(chunked);
  for (Engine* e : {&engine, &small_chunks}) {
    const GenerateResult r = e->generate({forced}, {echo})[0];
    EXPECT_TRUE(r.output_ids.empty());
    ASSERT_EQ(r.prompt_logprobs.size(), forced.size());
    EXPECT_TRUE(std::isnan(r.prompt_logprobs[0].logprob));
    EXPECT_TRUE(r.prompt_logprobs[0].top.empty());
    for (size_t p = 0; p < forced.size(); ++p) {
      EXPECT_EQ(r.prompt_logprobs[p].id, forced[p]);
      if (p > 0) EXPECT_LE(r.prompt_logprobs[p].logprob, 0.f);
    }
    for (size_t i = 0; i < gen.logprobs.size(); ++i) {
      const TokenLogprob& a = r.prompt_logprobs[c.prompt_ids.size() + i];
      EXPECT_NEAR(a.logprob, gen.logprobs[i].logprob, 1e-4) << "token " << i;
      ASSERT_EQ(a.top.size(), 2u);
      EXPECT_EQ(a.top[0].first, gen.logprobs[i].top[0].first);
    }
  }
  // The prefix cache is bypassed for prompt logprobs: a cached prompt still gets them all,
  // the same; and the eager path gives them bit for bit as the piecewise graphs do.
  const GenerateResult first = engine.generate({forced}, {echo})[0];
  const GenerateResult again = engine.generate({forced}, {echo})[0];
  expect_same(again.prompt_logprobs, first.prompt_logprobs, "cached prompt");
  EngineConfig eager_cfg = cpu_engine_config();
  eager_cfg.disable_cuda_graph = true;
  Engine eager(eager_cfg);
  expect_same(eager.generate({forced}, {echo})[0].prompt_logprobs, first.prompt_logprobs, "eager");
  EXPECT_EQ(engine.stats().captures_after_seal, 0u);
}

TEST(EngineLogprobs, LogitBiasForcesATokenAndLogprobsStayRaw) {
  Engine engine(cpu_engine_config());
  const GoldenCase c = golden_cases()[2];
  const GenerateResult plain = engine.generate({c.prompt_ids}, {greedy(4, 3)})[0];
  const int32_t second = plain.logprobs[0].top[1].first;  // not the greedy choice
  ASSERT_NE(second, plain.output_ids[0]);
  SamplingParams biased = greedy(4, 3);
  biased.logit_bias = {{second, 100.f}};
  const GenerateResult b = engine.generate({c.prompt_ids}, {biased})[0];
  EXPECT_EQ(b.output_ids, std::vector<int32_t>(4, second));
  // The reported logprob is of the model's distribution, before the bias.
  EXPECT_EQ(b.logprobs[0].logprob, plain.logprobs[0].top[1].second);
  EXPECT_EQ(b.logprobs[0].top, plain.logprobs[0].top);
  // A -100 bias on the greedy token moves greedy to the next one; other rows are not biased.
  SamplingParams ban = greedy(1, -1);
  ban.logit_bias = {{plain.output_ids[0], -100.f}};
  const auto rows = engine.generate({c.prompt_ids, c.prompt_ids}, {ban, greedy(1, -1)});
  EXPECT_EQ(rows[0].output_ids[0], second);
  EXPECT_EQ(rows[1].output_ids[0], plain.output_ids[0]);
}

TEST(EngineLogprobs, BadFieldsAreRefusedByName) {
  Engine engine(cpu_engine_config());
  auto refused = [&](const SamplingParams& p) -> std::string {
    try {
      engine.submit(golden_cases()[0].prompt_ids, p, [](const RequestOutput&) {});
    } catch (const RequestError& e) {
      return e.param();
    }
    return "";
  };
  SamplingParams p = greedy(2, 21);
  EXPECT_EQ(refused(p), "logprobs");
  p = greedy(2, -1);
  p.prompt_logprobs = true;
  EXPECT_EQ(refused(p), "prompt_logprobs");
  p = greedy(2, -1);
  p.logit_bias = {{1 << 20, 1.f}};
  EXPECT_EQ(refused(p), "logit_bias");
  p.logit_bias = {{1, 100.5f}};
  EXPECT_EQ(refused(p), "logit_bias");
}

// --disable-logprobs: a request for logprobs is refused by name, the others run as before,
// and the runner keeps no [max_seqs, vocab] float32 copy of the raw logits.
TEST(EngineLogprobs, DisabledLogprobsAreRefusedAndNeedNoRawLogitsBuffer) {
  Engine on(cpu_engine_config());
  EngineConfig cfg = cpu_engine_config();
  cfg.disable_logprobs = true;
  Engine off(cfg);
  const GoldenCase c = golden_cases()[0];
  EXPECT_EQ(off.generate({c.prompt_ids}, {greedy(12, -1)})[0].output_ids,
            on.generate({c.prompt_ids}, {greedy(12, -1)})[0].output_ids);
  try {
    off.submit(c.prompt_ids, greedy(2, 0), [](const RequestOutput&) {});
    ADD_FAILURE() << "a logprobs request was accepted";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_request);
    EXPECT_EQ(e.param(), "logprobs");
    EXPECT_NE(std::string(e.what()).find("--disable-logprobs"), std::string::npos) << e.what();
  }
  EXPECT_THROW(off.check_request(c.prompt_ids, greedy(2, 5)), RequestError);
  const StepBuffers& b_on = EngineBenchAccess::runner(on).buffers();
  const StepBuffers& b_off = EngineBenchAccess::runner(off).buffers();
  EXPECT_TRUE(b_on.logprob_logits.defined());
  EXPECT_FALSE(b_off.logprob_logits.defined());
  ASSERT_EQ(b_on.sizes.max_seqs, b_off.sizes.max_seqs);
  EXPECT_EQ(b_on.bytes - b_off.bytes, size_t(b_on.sizes.max_seqs) * size_t(b_on.logits.size(1)) * sizeof(float));
}

}  // namespace
}  // namespace seam::test
