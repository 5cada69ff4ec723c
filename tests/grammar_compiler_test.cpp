// The compile front door: every constraint kind compiles, equal texts share
// one CompiledGrammar, the cache stays within its byte bound (least recent
// out first), bad input is an error with the reason.
#include <thread>

#include "core/error.h"
#include "grammar_test_util.h"

namespace seam::grammar::test {
namespace {

TEST(GrammarCompiler, EveryKindCompilesAndSharesByText) {
  GrammarCompiler c(test_vocab("llama3-style").vocab);
  const Constraint kinds[] = {
      {ConstraintKind::kJsonSchema, R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})", {}},
      {ConstraintKind::kJsonObject, "", {}},
      {ConstraintKind::kRegex, "[0-9]+", {}},
      {ConstraintKind::kEbnf, "root ::= \"x\"+", {}},
      {ConstraintKind::kChoice, R"(["red","green","blue"])", {}},
  };
  std::vector<std::shared_ptr<const CompiledGrammar>> first;
  for (const Constraint& k : kinds) first.push_back(c.compile(k));
  for (size_t i = 0; i < std::size(kinds); ++i) EXPECT_EQ(c.compile(kinds[i]).get(), first[i].get());
  EXPECT_EQ(c.stats().n_entries, std::size(kinds));
  EXPECT_EQ(c.stats().n_hits, std::size(kinds));
  // The same text under another kind or other options is another grammar.
  Constraint ws = kinds[0];
  ws.json_options.any_whitespace = true;
  EXPECT_NE(c.compile(ws).get(), first[0].get());
  // A choice accepts exactly its strings.
  GrammarMatcher m(first[4]);
  EXPECT_FALSE(m.accept_bytes("gray"));
  EXPECT_TRUE(m.accept_bytes("gre"));  // a prefix is accepted ...
  EXPECT_FALSE(m.can_end());           // ... but cannot end
  EXPECT_TRUE(m.accept_bytes("en"));
  EXPECT_TRUE(m.can_end());
}

TEST(GrammarCompiler, CacheStaysWithinItsByteBound) {
  CompileOptions o;
  o.state_mask_cache_bytes = 64 << 10;
  o.stack_top_mask_bytes = 64 << 10;
  const auto vocab = test_vocab("llama3-style").vocab;
  // Room for a few grammars: each costs its masks plus its state-mask cache bound.
  const auto probe =
      std::make_shared<const CompiledGrammar>(constraint_grammar({ConstraintKind::kRegex, "a{1}", {}}), vocab, o);
  const size_t one = probe->memory_bytes() + o.state_mask_cache_bytes + o.stack_top_mask_bytes;
  const size_t budget = 4 * one;
  GrammarCompiler c(vocab, budget, o);
  std::vector<std::shared_ptr<const CompiledGrammar>> kept;
  for (int i = 1; i <= 40; ++i) {
    kept.push_back(c.compile({ConstraintKind::kRegex, "a{" + std::to_string(i) + "}", {}}));
    EXPECT_LE(c.stats().n_bytes, budget);
  }
  EXPECT_LT(c.stats().n_entries, 40u);
  EXPECT_GE(c.stats().n_entries, 1u);
  // The most recent is still cached; the first was evicted (a new object now),
  // while the request that holds the old one keeps it alive.
  EXPECT_EQ(c.compile({ConstraintKind::kRegex, "a{40}", {}}).get(), kept.back().get());
  EXPECT_NE(c.compile({ConstraintKind::kRegex, "a{1}", {}}).get(), kept.front().get());
  GrammarMatcher still(kept.front());
  EXPECT_TRUE(still.accept_bytes("a"));
}

// One CompiledGrammar shared by matchers on several threads (its lazily filled
// mask caches under contention) gives the masks a lone matcher gives.
TEST(GrammarCompiler, SharedGrammarAcrossThreadsGivesTheSameMasks) {
  const TestVocab& tv = test_vocab("llama3-style");
  const Constraint k{ConstraintKind::kJsonSchema,
                     R"({"type":"object","properties":{"a":{"type":"array","items":{"type":"string"}},
                        "b":{"anyOf":[{"type":"integer"},{"type":"null"}]}},"required":["a","b"]})",
                     {}};
  const std::vector<int32_t> ids = tv.tokenizer->encode(R"({"a": ["x y", "z\n"], "b": 12})", false);
  auto masks_of = [&](std::shared_ptr<const CompiledGrammar> g) {
    GrammarMatcher m(std::move(g));
    std::vector<std::vector<uint32_t>> out;
    std::vector<uint32_t> w(static_cast<size_t>(m.n_words()));
    for (int32_t id : ids) {
      m.fill_next_token_bitmask(w.data());
      out.push_back(w);
      if (!m.accept_token(id)) break;
    }
    out.push_back({m.can_end() ? 1u : 0u});
    return out;
  };
  CompileOptions lazy;
  lazy.precompute_masks = false;
  const auto reference = masks_of(std::make_shared<const CompiledGrammar>(constraint_grammar(k), tv.vocab, lazy));
  ASSERT_EQ(reference.back()[0], 1u);  // the text fits the schema
  const auto shared = std::make_shared<const CompiledGrammar>(constraint_grammar(k), tv.vocab, lazy);
  std::vector<std::thread> threads;
  std::vector<int> same(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 5; ++r) same[static_cast<size_t>(t)] += masks_of(shared) == reference;
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(same[static_cast<size_t>(t)], 5) << t;
}

TEST(GrammarCompiler, BadInputIsAnErrorWithTheReason) {
  GrammarCompiler c(test_vocab("stories260K").vocab);
  auto reason = [&](const Constraint& k) -> std::string {
    try {
      c.compile(k);
    } catch (const ::seam::Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(reason({ConstraintKind::kJsonSchema, "{\"type\":\"object\",\"patternProperties\":{}}", {}})
                .find("unsupported JSON Schema keyword 'patternProperties'"),
            std::string::npos);
  EXPECT_NE(reason({ConstraintKind::kRegex, "(a", {}}).find("regex:"), std::string::npos);
  EXPECT_NE(reason({ConstraintKind::kEbnf, "root ::= (", {}}).find("ebnf: line 1"), std::string::npos);
  EXPECT_NE(reason({ConstraintKind::kChoice, "[1]", {}}).find("choice:"), std::string::npos);
  EXPECT_EQ(c.stats().n_entries, 0u);  // failures are not cached
}

}  // namespace
}  // namespace seam::grammar::test
