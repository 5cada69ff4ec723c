// Structured output through the Engine face (stories260K on the CPU backend): every output
// of a constrained request is accepted by a fresh GrammarMatcher fed its ids (and, when it
// stopped, is a complete sentence of the grammar), JSON outputs parse and validate against
// their schema, regex outputs match through PCRE2; under graphs on and off, mixed chunks of
// 16 tokens, temperature 0 and seeded temperature 1, n > 1, stop strings, stop_token_ids,
// max_new_tokens cuts and retraction (whose outputs must equal the unretracted run's: the
// grammar state survives the re-prefill). Bad constraints are invalid_request naming the
// field, at submit.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "engine/structured_output.h"
#include "golden.h"
#include "grammar/grammar_compiler.h"
#include "grammar/grammar_matcher.h"
#include "grammar_schema_validator.h"
#include "grammar_test_util.h"

namespace seam::test {
namespace {

using grammar::test::ojson;

struct Case {
  std::string name;
  OutputConstraint c;
  bool bounded;  // every sentence is short: a run of 200 tokens must stop, not hit the length
};

OutputConstraint make(OutputConstraint::Kind kind, std::string text) {
  OutputConstraint c;
  c.kind = kind;
  c.text = std::move(text);
  c.field = "response_format";
  return c;
}

const char* kNested = R"({"type":"object","properties":{
  "id":{"type":"integer","minimum":0,"maximum":999},
  "tags":{"type":"array","items":{"enum":["a","b","c"]},"minItems":1,"maxItems":3},
  "owner":{"type":"object","properties":{"name":{"type":"string","pattern":"^[a-z]{2,6}$"},"ok":{"type":"boolean"}},
           "required":["name","ok"]},
  "kind":{"anyOf":[{"type":"null"},{"const":"x"}]}},
  "required":["id","tags","owner","kind"]})";
const char* kRecursive = R"({"$defs":{"n":{"type":"object","properties":{"v":{"enum":[1,2]},
  "k":{"type":"array","items":{"$ref":"#/$defs/n"},"maxItems":2}},"required":["v","k"]}},"$ref":"#/$defs/n"})";
const char* kRegex = "(yes|no)-[0-9]{3}";

std::vector<Case> suite() {
  using K = OutputConstraint::Kind;
  return {
      {"nested_schema", make(K::json_schema, kNested), true},
      {"recursive_ref", make(K::json_schema, kRecursive), false},
      {"json_object", make(K::json_object, ""), false},
      {"regex", make(K::regex, kRegex), true},
      {"ebnf", make(K::ebnf, R"(root ::= "[" item ("," item)? "]"
item ::= [a-c] [0-9])"),
       true},
      {"choice", make(K::choice, R"(["red","green","blue"])"), true},
  };
}

grammar::Constraint to_grammar(const OutputConstraint& c) {
  grammar::Constraint g;
  g.kind = std::map<OutputConstraint::Kind, grammar::ConstraintKind>{
      {OutputConstraint::Kind::json_schema, grammar::ConstraintKind::kJsonSchema},
      {OutputConstraint::Kind::json_object, grammar::ConstraintKind::kJsonObject},
      {OutputConstraint::Kind::regex, grammar::ConstraintKind::kRegex},
      {OutputConstraint::Kind::ebnf, grammar::ConstraintKind::kEbnf},
      {OutputConstraint::Kind::choice, grammar::ConstraintKind::kChoice}}.at(c.kind);
  g.text = c.text;
  g.json_options.any_whitespace = c.any_whitespace;
  g.json_options.strict_properties = c.strict_properties;
  return g;
}

// The test's own compiler over the engine's vocabulary (the model's EOS ids stop).
grammar::GrammarCompiler& test_compiler(const Engine& e) {
  static std::unique_ptr<grammar::GrammarCompiler> compiler;
  if (!compiler)
    compiler = std::make_unique<grammar::GrammarCompiler>(std::make_shared<const grammar::TokenVocabulary>(
        grammar::TokenVocabulary::from_tokenizer(e.tokenizer(), e.model_info().eos_token_ids)));
  return *compiler;
}

// Checks one output against its constraint; returns the bytes of its tokens.
std::string check_output(const Engine& e, const OutputConstraint& c, const GenerateResult& r,
                         const SamplingParams& p, const std::string& where) {
  grammar::GrammarMatcher m(test_compiler(e).compile(to_grammar(c)));
  std::string bytes;
  for (int32_t id : r.output_ids) {
    EXPECT_TRUE(m.accept_token(id)) << where << ": token " << id << " after '" << bytes << "' is not in the grammar";
    bytes += m.grammar().vocab().bytes(id);
  }
  EXPECT_TRUE(r.finish_reason == FinishReason::stop || r.finish_reason == FinishReason::length) << where;
  if (r.finish_reason == FinishReason::length) {
    EXPECT_EQ(int(r.output_ids.size()), p.max_new_tokens) << where;
  } else if (p.stop.empty()) {  // stopped by EOS / a stop id: only where the grammar may end
    EXPECT_TRUE(m.can_end()) << where << ": stopped inside the structure: '" << bytes << "'";
  }
  // The streamed text is the grammar's bytes (SentencePiece's word-start space included).
  if (p.stop.empty()) EXPECT_EQ(r.text, bytes) << where;
  if (r.finish_reason != FinishReason::stop || !p.stop.empty()) return bytes;
  if (c.kind == OutputConstraint::Kind::json_schema || c.kind == OutputConstraint::Kind::json_object) {
    ojson v;
    EXPECT_NO_THROW(v = ojson::parse(bytes)) << where << ": " << bytes;
    if (c.kind == OutputConstraint::Kind::json_object) {
      EXPECT_TRUE(v.is_object()) << where;
    } else {
      const ojson schema = ojson::parse(c.text);
      EXPECT_EQ(grammar::test::validate(v, schema, schema), "") << where << ": " << bytes;
    }
  } else if (c.kind == OutputConstraint::Kind::regex) {
    EXPECT_TRUE(grammar::test::pcre2_full_match(c.text, bytes)) << where << ": " << bytes;
  } else if (c.kind == OutputConstraint::Kind::choice) {
    EXPECT_TRUE(bytes == "red" || bytes == "green" || bytes == "blue") << where << ": " << bytes;
  }
  return bytes;
}

// One engine of the default configuration for the tests that need no other (start-up captures
// its graphs: the test's main cost).
Engine& default_engine() {
  static Engine engine(cpu_engine_config());
  return engine;
}

const std::vector<int32_t>& prompt(const Engine& e) {
  static std::vector<int32_t> ids = e.tokenizer().encode("Once upon a time, there was a little girl", true);
  return ids;
}

SamplingParams params(const OutputConstraint& c, float temperature, uint64_t seed, int max_new = 200) {
  SamplingParams p;
  p.temperature = temperature;
  p.seed = seed;
  p.max_new_tokens = max_new;
  p.constraint = c;
  return p;
}

// The whole suite at temperature 0 and at temperature 1 with two seeds (three choices of one
// request: one group, each with its own matcher), all in one batch; returns the outputs.
std::vector<std::vector<int32_t>> run_suite(const EngineConfig& cfg, const std::string& tag,
                                            EngineStats* stats_out = nullptr) {
  Engine engine(cfg);
  std::vector<std::vector<int32_t>> prompts;
  std::vector<SamplingParams> ps;
  std::vector<const Case*> cases;
  static const std::vector<Case> all = suite();
  for (const Case& c : all)
    for (auto [t, seed] : {std::pair{0.f, 0ull}, std::pair{1.f, 7ull}, std::pair{1.f, 8ull}}) {
      prompts.push_back(prompt(engine));
      ps.push_back(params(c.c, t, seed));
      cases.push_back(&c);
    }
  // An unconstrained golden case rides along: its rows pay nothing and change nothing.
  const GoldenCase golden = golden_cases()[0];
  prompts.push_back(golden.prompt_ids);
  ps.push_back(golden_params(golden));
  const auto results = engine.generate(prompts, ps);
  std::vector<std::vector<int32_t>> outs;
  for (size_t i = 0; i + 1 < results.size(); ++i) {
    const std::string where = tag + " " + cases[i]->name + " t=" + std::to_string(ps[i].temperature) + " seed " +
                              std::to_string(*ps[i].seed);
    check_output(engine, cases[i]->c, results[i], ps[i], where);
    if (cases[i]->bounded) EXPECT_EQ(results[i].finish_reason, FinishReason::stop) << where;
    outs.push_back(results[i].output_ids);
  }
  EXPECT_EQ(results.back().output_ids, golden.generated_ids) << tag << ": the unconstrained row changed";
  engine.wait_idle();
  const EngineStats s = engine.stats();
  EXPECT_EQ(s.grammar_requests, uint64_t(cases.size())) << tag;
  EXPECT_EQ(s.grammar_cache_misses, all.size()) << tag << ": one compile per distinct constraint";
  // Each constraint's three rows: one compile (the miss), two hits; generate() compiles each
  // row's constraint once (checking it is that compile).
  EXPECT_EQ(s.grammar_cache_hits, 2 * all.size()) << tag;
  EXPECT_GT(s.grammar_mask_steps, 0u) << tag;
  EXPECT_GE(s.grammar_masked_rows_total, s.grammar_mask_steps) << tag;
  EXPECT_GT(s.grammar_mask_ms_total, 0.0) << tag;
  // The CPU backend runs the forward before the masks: never hidden, all of it exposed.
  EXPECT_EQ(s.grammar_mask_hidden_steps, 0u) << tag;
  EXPECT_GT(s.grammar_mask_exposed_ms_total, 0.0) << tag;
  EXPECT_LE(s.grammar_mask_exposed_ms_total, s.grammar_mask_ms_total) << tag;
  EXPECT_EQ(s.captures_after_seal, 0u) << tag;
  const nlohmann::json j = s.to_json();
  EXPECT_EQ(j["grammar_requests"], s.grammar_requests) << tag;
  EXPECT_TRUE(j.contains("grammar_mask_exposed_ms_total")) << tag;
  if (stats_out) *stats_out = s;
  return outs;
}

TEST(EngineStructuredOutput, SuiteUnderGraphsEagerAndMixedChunks) {
  EngineStats graphs_stats;
  const auto graphs = run_suite(cpu_engine_config(), "graphs", &graphs_stats);
  EXPECT_GT(graphs_stats.decode_graph_replays, 0u) << "constrained rows must share the decode graphs";
  auto eager_cfg = cpu_engine_config();
  eager_cfg.disable_cuda_graph = true;
  EngineStats eager_stats;
  const auto eager = run_suite(eager_cfg, "eager", &eager_stats);
  EXPECT_EQ(eager_stats.decode_graph_replays, 0u);
  auto mixed_cfg = cpu_engine_config();
  mixed_cfg.enable_mixed_chunk = true;
  mixed_cfg.chunked_prefill_size = 16;
  EngineStats mixed_stats;
  const auto mixed = run_suite(mixed_cfg, "mixed16", &mixed_stats);
  // The CPU backend is bit-identical across paths, and a row's draw depends only on its seed,
  // step and (masked) logits: the same outputs whatever the batch shape.
  EXPECT_EQ(graphs, eager);
  EXPECT_EQ(graphs, mixed);
}

TEST(EngineStructuredOutput, MaxNewTokensCutsMidStructureWithLength) {
  Engine& engine = default_engine();
  const OutputConstraint c = make(OutputConstraint::Kind::json_schema, kNested);
  for (int max_new : {1, 5}) {
    const SamplingParams p = params(c, 0.f, 0, max_new);
    const auto r = engine.generate({prompt(engine)}, {p});
    EXPECT_EQ(r[0].finish_reason, FinishReason::length);
    ASSERT_EQ(int(r[0].output_ids.size()), max_new);
    check_output(engine, c, r[0], p, "max_new_tokens " + std::to_string(max_new));
    grammar::GrammarMatcher m(test_compiler(engine).compile(to_grammar(c)));
    for (int32_t id : r[0].output_ids) ASSERT_TRUE(m.accept_token(id));
    EXPECT_FALSE(m.can_end()) << "the cut must be mid-structure for this test to mean anything";
  }
}

TEST(EngineStructuredOutput, StopStringsEndTheTextAtTheMatch) {
  Engine& engine = default_engine();
  const OutputConstraint c = make(OutputConstraint::Kind::regex, kRegex);
  SamplingParams p = params(c, 0.f, 0);
  p.stop = {"-"};
  const auto r = engine.generate({prompt(engine)}, {p});
  EXPECT_EQ(r[0].finish_reason, FinishReason::stop);
  EXPECT_TRUE(r[0].text == "yes" || r[0].text == "no") << r[0].text;
  const std::string bytes = check_output(engine, c, r[0], p, "stop string");
  EXPECT_EQ(bytes.substr(0, r[0].text.size() + 1), r[0].text + "-");
}

TEST(EngineStructuredOutput, StopTokenIdsOnlyWhereTheGrammarMayEnd) {
  Engine& engine = default_engine();
  // "[0-9]{2,5}" with the token "7" a stop id: before two digits it is forbidden (the grammar
  // may not end there), after them it ends the request. So no output holds a 7.
  const OutputConstraint c = make(OutputConstraint::Kind::regex, "[0-9]{2,5}");
  const auto& vocab = test_compiler(engine).vocab();
  int32_t seven = -1;
  for (int32_t id = 0; id < vocab.vocab_size(); ++id)
    if (vocab.bytes(id) == "7") seven = id;
  ASSERT_GE(seven, 0);
  std::vector<std::vector<int32_t>> prompts;
  std::vector<SamplingParams> ps;
  for (uint64_t seed = 0; seed < 8; ++seed) {
    SamplingParams p = params(c, seed == 0 ? 0.f : 1.f, seed, 20);
    p.stop_token_ids = {seven};
    prompts.push_back(prompt(engine));
    ps.push_back(p);
  }
  const auto r = engine.generate(prompts, ps);
  for (size_t i = 0; i < r.size(); ++i) {
    const std::string where = "seed " + std::to_string(i);
    EXPECT_EQ(r[i].finish_reason, FinishReason::stop) << where;
    check_output(engine, c, r[i], ps[i], where);  // stopped: the ids before the stop can end
    EXPECT_GE(r[i].text.size(), 2u) << where;
    EXPECT_EQ(r[i].text.find('7'), std::string::npos) << where << ": " << r[i].text;
  }
}

TEST(EngineStructuredOutput, IgnoreEosEndsWhereTheGrammarEnds) {
  // With ignore_eos an EOS does not stop the request, but the grammar accepts it only at its
  // end and then nothing may follow: the request finishes "stop" with the EOS as its last id.
  Engine& engine = default_engine();
  const OutputConstraint c = make(OutputConstraint::Kind::choice, R"(["red","green","blue"])");
  SamplingParams p = params(c, 0.f, 0, 50);
  p.ignore_eos = true;
  const auto r = engine.generate({prompt(engine)}, {p});
  EXPECT_EQ(r[0].finish_reason, FinishReason::stop);
  ASSERT_FALSE(r[0].output_ids.empty());
  const auto& eos = engine.model_info().eos_token_ids;
  EXPECT_NE(std::find(eos.begin(), eos.end(), r[0].output_ids.back()), eos.end());
  EXPECT_TRUE(r[0].text == "red" || r[0].text == "green" || r[0].text == "blue") << r[0].text;
}

TEST(EngineStructuredOutput, UnconstrainedStepsBuildNoMask) {
  Engine& engine = default_engine();
  engine.wait_idle();
  const EngineStats before = engine.stats();
  const GoldenCase golden = golden_cases()[1];
  const auto r = engine.generate({golden.prompt_ids}, {golden_params(golden)});
  EXPECT_EQ(r[0].output_ids, golden.generated_ids);
  engine.wait_idle();
  const EngineStats after = engine.stats();
  EXPECT_GT(after.steps, before.steps);
  EXPECT_EQ(after.grammar_mask_steps, before.grammar_mask_steps);
  EXPECT_EQ(after.grammar_masked_rows_total, before.grammar_masked_rows_total);
  EXPECT_EQ(after.grammar_mask_ms_total, before.grammar_mask_ms_total);
}

TEST(EngineStructuredOutput, RetractionKeepsTheGrammarState) {
  // Unbounded JSON objects run to max_new_tokens; a pool that holds a little more than one
  // request forces retractions. The re-prefilled requests continue from their kept output: the
  // same tokens as with a large pool (greedy and seeded alike), every output in the grammar.
  const OutputConstraint c = make(OutputConstraint::Kind::json_object, "");
  auto run = [&](int pool, EngineStats* stats) {
    auto cfg = cpu_engine_config();
    cfg.max_total_tokens = pool;
    cfg.enable_mixed_chunk = true;
    cfg.chunked_prefill_size = 16;
    Engine engine(cfg);
    std::vector<std::vector<int32_t>> prompts;
    std::vector<SamplingParams> ps;
    for (uint64_t i = 0; i < 6; ++i) {
      prompts.push_back(prompt(engine));
      ps.push_back(params(c, i == 0 ? 0.f : 1.f, i, 100));
    }
    const auto r = engine.generate(prompts, ps);
    std::vector<std::vector<int32_t>> out;
    for (size_t i = 0; i < r.size(); ++i) {
      check_output(engine, c, r[i], ps[i], "pool " + std::to_string(pool) + " request " + std::to_string(i));
      out.push_back(r[i].output_ids);
    }
    engine.wait_idle();
    *stats = engine.stats();
    return out;
  };
  EngineStats small, large;
  const auto retracted = run(180, &small);
  const auto whole = run(0, &large);
  EXPECT_GT(small.retractions, 0u);
  EXPECT_EQ(large.retractions, 0u);
  EXPECT_EQ(retracted, whole);
}

TEST(EngineStructuredOutput, BadConstraintsAreInvalidRequestNamingTheField) {
  Engine& engine = default_engine();
  using K = OutputConstraint::Kind;
  struct Bad {
    OutputConstraint c;
    std::string reason;  // a piece of the compiler's message
  };
  auto bad = [](K kind, std::string text, std::string field, std::string reason) {
    OutputConstraint c = make(kind, std::move(text));
    c.field = std::move(field);
    return Bad{c, std::move(reason)};
  };
  const std::vector<Bad> cases = {
      bad(K::json_schema, R"({"type": "object",)", "response_format", ""),  // not JSON
      bad(K::json_schema, R"({"type":"object","patternProperties":{"a":{}}})", "structured_outputs.json",
          "patternProperties"),
      bad(K::regex, "(ab", "regex", ""),
      bad(K::ebnf, "root ::= undefined_rule", "ebnf", ""),
      bad(K::choice, "[1]", "structured_outputs.choice", "choice"),
  };
  engine.wait_idle();
  const EngineStats before = engine.stats();
  for (const Bad& b : cases) {
    SamplingParams p = params(b.c, 0.f, 0, 8);
    try {
      engine.submit(prompt(engine), p, [](const RequestOutput&) {});
      ADD_FAILURE() << b.c.text << ": accepted";
    } catch (const RequestError& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_request) << b.c.text;
      EXPECT_EQ(e.param(), b.c.field) << b.c.text;
      EXPECT_NE(std::string(e.what()).find(b.reason), std::string::npos) << b.c.text << ": " << e.what();
      EXPECT_FALSE(std::string(e.what()).empty());
    }
    EXPECT_THROW(engine.check_request(prompt(engine), p), RequestError) << b.c.text;
  }
  engine.wait_idle();
  EXPECT_EQ(engine.stats().grammar_requests, before.grammar_requests);
  EXPECT_EQ(engine.stats().finished_requests, before.finished_requests) << "nothing was queued";
}

// The runner hands fill_mask the pinned mask rows as the last step left them: every word of
// the row must be written (the matcher's words as it computes them, the words past its
// vocabulary clear), whatever the buffer held.
TEST(EngineStructuredOutput, FillMaskWritesEveryWordOfTheRow) {
  const auto tok = load_tokenizer(stories_dir());
  StructuredOutput so(*tok, {}, size_t{1} << 20);
  const auto compiled = so.compile(make(OutputConstraint::Kind::choice, R"(["red","green","blue"])"));
  grammar::GrammarMatcher m(compiled);
  std::vector<uint32_t> expected(size_t(m.n_words()));
  grammar::GrammarMatcher(compiled).fill_next_token_bitmask(expected.data());
  ASSERT_NE(std::count(expected.begin(), expected.end(), 0u), std::ptrdiff_t(expected.size())) << "some allowed";
  SamplingParams p;
  for (const int extra : {0, 3}) {  // the model's vocabulary as wide as the tokenizer's, or padded past it
    std::vector<uint32_t> words(expected.size() + size_t(extra), 0xffffffffu);
    so.fill_mask(m, p, words.data(), int(words.size()));
    EXPECT_TRUE(std::equal(expected.begin(), expected.end(), words.begin())) << extra;
    EXPECT_EQ(std::count(words.begin() + std::ptrdiff_t(expected.size()), words.end(), 0u), extra);
  }
  // A model vocabulary narrower than the tokenizer's: its words only.
  std::vector<uint32_t> narrow(expected.size() - 1, 0xffffffffu);
  so.fill_mask(m, p, narrow.data(), int(narrow.size()));
  EXPECT_TRUE(std::equal(narrow.begin(), narrow.end(), expected.begin()));
}

}  // namespace
}  // namespace seam::test
