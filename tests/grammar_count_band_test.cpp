// Shared stack-top masks for length-bounded strings and bounded repetitions (grammar/count_band.h):
// with sharing on, every step's token mask must be the one computed without it (and, at the first
// steps of each walk, the brute-force mask: every token fed to a copy of the matcher), along walks
// that keep strings open long enough to pass the band and reach their length bounds; sharing must
// actually happen (positions aliased, fewer stack-top masks computed); and it must not happen
// where a token could reach the bound (a maxLength under the longest token).
#include <algorithm>

#include "grammar/compiled_grammar.h"
#include "grammar_test_util.h"

namespace seam::grammar::test {
namespace {

std::shared_ptr<const CompiledGrammar> compile(const std::string& schema, const TestVocab& v, bool share) {
  CompileOptions o;
  o.share_count_band_masks = share;
  o.state_mask_cache_bytes = 0;  // every mask from the stack-top masks: what is compared
  return std::make_shared<const CompiledGrammar>(constraint_grammar({ConstraintKind::kJsonSchema, schema, {}}),
                                                 v.vocab, o);
}

// Walks both matchers with the same tokens; the draw prefers tokens without a quote (strings stay
// open up to their bound) with probability 7/8 while `steps < n_open`.
void walk_both(const std::shared_ptr<const CompiledGrammar>& shared, const std::shared_ptr<const CompiledGrammar>& own,
               std::mt19937& rng, int max_steps, int n_open, int n_brute) {
  GrammarMatcher a(shared), b(own);
  const TokenVocabulary& v = shared->vocab();
  std::vector<uint32_t> wa(static_cast<size_t>(a.n_words())), wb(wa.size());
  for (int step = 0; step < max_steps && !a.is_terminated(); ++step) {
    a.fill_next_token_bitmask(wa.data());
    b.fill_next_token_bitmask(wb.data());
    ASSERT_EQ(wa, wb) << "step " << step << ": the shared mask differs from the unshared one";
    if (step < n_brute) ASSERT_EQ(brute_force_mask(a), wa) << "step " << step << ": not the brute-force mask";
    const std::vector<int32_t> ids = allowed_ids(wa.data(), v.vocab_size());
    ASSERT_FALSE(ids.empty());
    std::vector<int32_t> open;
    for (int32_t id : ids)
      if (!v.is_stop(id) && v.bytes(id).find('"') == std::string::npos) open.push_back(id);
    const auto& pool = step < n_open && !open.empty() && rng() % 8 != 0 ? open : ids;
    const int32_t id = pool[rng() % pool.size()];
    ASSERT_TRUE(a.accept_token(id));
    ASSERT_TRUE(b.accept_token(id));
  }
}

struct Case {
  const char* name;
  const char* schema;
};

const Case kCases[] = {
    {"httpurl", R"({"type":"object","properties":{"url":{"type":"string","format":"uri","minLength":1,
      "maxLength":2083}},"required":["url"]})"},
    {"slug", R"({"type":"string","pattern":"^[a-z0-9-]+$","minLength":3,"maxLength":90})"},
    {"alternation", R"({"type":"string","pattern":"^ab(c|de)*f$","minLength":4,"maxLength":80})"},
    {"plain_string", R"({"type":"string","minLength":2,"maxLength":120})"},
    {"array_items", R"({"type":"array","items":{"type":"integer"},"maxItems":70})"},
};

TEST(GrammarCountBand, SharedMasksAreTheUnsharedOnes) {
  for (const char* vocab : {"stories260K", "llama3-style"})
    for (const Case& c : kCases) {
      SCOPED_TRACE(std::string(vocab) + " " + c.name);
      const TestVocab& v = test_vocab(vocab);
      const auto shared = compile(c.schema, v, true), own = compile(c.schema, v, false);
      EXPECT_GT(shared->n_shared_mask_positions(), 0u) << "no position shares a mask: the test would be vacuous";
      EXPECT_EQ(own->n_shared_mask_positions(), 0u);
      std::mt19937 rng(3);
      for (int w = 0; w < 6; ++w) walk_both(shared, own, rng, 260, 240, w == 0 ? 12 : 0);
      EXPECT_LT(shared->n_stack_top_masks(), own->n_stack_top_masks()) << "sharing computed no fewer masks";
    }
}

// Walks that end exactly at the bound: a string of exactly maxLength characters must be allowed to
// close there and not to go on, with sharing on (the band stops T characters before the bound).
TEST(GrammarCountBand, TheBoundStillHolds) {
  const TestVocab& v = test_vocab("llama3-style");
  // 100: over the vocabulary's longest token (64 bytes), so the band is not empty.
  for (const char* schema :
       {R"({"type":"string","maxLength":100})", R"({"type":"string","pattern":"^[a-z]+$","maxLength":100})"}) {
    SCOPED_TRACE(schema);
    const auto g = compile(schema, v, true);
    ASSERT_GT(g->n_shared_mask_positions(), 0u);
    GrammarMatcher m(g);
    std::vector<uint32_t> w(static_cast<size_t>(m.n_words()));
    const int32_t quote = v.tokenizer->token_to_id("\"");
    const int32_t a = v.tokenizer->token_to_id("a");
    ASSERT_GE(quote, 0);
    ASSERT_GE(a, 0);
    ASSERT_TRUE(m.accept_token(quote));
    for (int i = 0; i < 100; ++i) {
      m.fill_next_token_bitmask(w.data());
      ASSERT_TRUE(test_bit(w.data(), a)) << "character " << i;
      ASSERT_TRUE(m.accept_token(a));
    }
    m.fill_next_token_bitmask(w.data());
    EXPECT_FALSE(test_bit(w.data(), a)) << "a 101st character was allowed";
    EXPECT_TRUE(test_bit(w.data(), quote)) << "the string could not close at its bound";
    EXPECT_EQ(brute_force_mask(m), w);
  }
}

// No band where a token could reach the bound: a maxLength under the longest token shares nothing.
TEST(GrammarCountBand, NoSharingWhereATokenCanReachTheBound) {
  const TestVocab& v = test_vocab("llama3-style");
  const std::string n = std::to_string(v.vocab->max_token_bytes());
  ASSERT_EQ(v.vocab->max_token_bytes(), 64u);  // the llama3-style vocabulary's longest token
  for (const std::string& schema : {R"({"type":"string","maxLength":)" + n + "}",
                                    R"({"type":"string","pattern":"^[a-z]+$","maxLength":)" + n + "}"}) {
    SCOPED_TRACE(schema);
    EXPECT_EQ(compile(schema, v, true)->n_shared_mask_positions(), 0u);
  }
}

}  // namespace
}  // namespace seam::grammar::test
