// Regex constraints: every sampled output (two real tokenizers) matches the
// pattern under PCRE2; exact membership on chosen strings; refused constructs.
#include "core/error.h"
#include "grammar/grammar_program.h"
#include "grammar/regex_to_grammar.h"
#include "grammar_test_util.h"

namespace seam::grammar::test {
namespace {

const char* kPatterns[] = {
    R"(\d{3}-\d{4})",
    R"((\+1 )?\(\d{3}\) \d{3}-\d{4})",
    R"(^(yes|no|maybe)$)",
    R"([A-Z][a-z]{1,6}( [A-Z][a-z]{1,6}){0,2})",
    R"([^aeiou\s]{2,5}x?)",
    R"(\w+@\w+\.(com|org))",
    R"(0x[0-9a-fA-F]{1,8}|-?\d+(\.\d+)?)",
    R"([а-я]{1,3}-[😀-😏]?)",
    R"(a.{0,3}b)",
    R"(\S\s\W[\D]{2})",
    R"((?:ab|cd)*e)",
    R"((?<year>\d{4})-(?P<m>0[1-9]|1[0-2]))",
    R"(x\.y\*\\[\]\-]{2})",
    R"([\x41-\x43\x{e9}]+)",
    R"(colou?r[s]*?)",
};

class RegexSuite : public ::testing::TestWithParam<const char*> {};

TEST_P(RegexSuite, SamplesMatchUnderPcre2) {
  const TestVocab& tv = test_vocab(GetParam());
  GrammarCompiler compiler(tv.vocab);
  std::mt19937 rng(99);
  for (const char* p : kPatterns) {
    SCOPED_TRACE(p);
    const auto g = compiler.compile({ConstraintKind::kRegex, p, {}});
    int n_terminated = 0;
    for (int i = 0; i < 10; ++i) {
      const Sample s = sample(g, rng, 300, 20, i < 2 ? 15 : 0);
      EXPECT_EQ(s.n_mask_mismatches, 0);
      if (!s.terminated) continue;
      ++n_terminated;
      EXPECT_TRUE(pcre2_full_match(p, s.text)) << "output '" << s.text << "'";
    }
    EXPECT_GE(n_terminated, 5);
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, RegexSuite, ::testing::Values("stories260K", "llama3-style"));

bool regex_accepts(const std::string& pattern, const std::string& text) {
  auto g = std::make_shared<const CompiledGrammar>(regex_to_grammar(pattern), test_vocab("stories260K").vocab,
                                                   CompileOptions{false});
  GrammarMatcher m(g);
  return m.accept_bytes(text) && m.can_end();
}

TEST(Regex, MembershipAgreesWithPcre2) {
  const std::vector<std::string> texts = {"",
                                          "a",
                                          "ab",
                                          "aXb",
                                          "a\nb",
                                          "abbb",
                                          "xyz",
                                          "yes",
                                          "no",
                                          "maybe",
                                          "123-4567",
                                          "12-34",
                                          "0x1F",
                                          "-12.5",
                                          "e",
                                          "abcde",
                                          "cdabe",
                                          "colours",
                                          "\xC3\xA9"
                                          "A"};
  for (const char* p : kPatterns)
    for (const std::string& t : texts)
      EXPECT_EQ(regex_accepts(p, t), pcre2_full_match(p, t)) << p << " on '" << t << "'";
  EXPECT_FALSE(regex_accepts("a.b", "a\nb"));                  // '.' is not a newline, as in PCRE
  EXPECT_TRUE(regex_accepts("\\u00e9+", "\xC3\xA9\xC3\xA9"));  // \uXXXX as in JavaScript / Python
}

void expect_regex_error(const std::string& p, const std::string& needle) {
  try {
    lower_grammar(regex_to_grammar(p));  // what compiling does; some errors come from lowering
    ADD_FAILURE() << "no error for " << p;
  } catch (const ::seam::Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Regex, RefusedConstructsAreClearErrors) {
  expect_regex_error(R"((a)\1)", "backreferences");
  expect_regex_error(R"((?<n>a)\k<n>)", "backreferences");
  expect_regex_error("a(?=b)", "lookaround");
  expect_regex_error("a(?!b)", "lookaround");
  expect_regex_error("(?<=a)b", "lookaround");
  expect_regex_error(R"(\bword\b)", "word boundaries");
  expect_regex_error("a++", "possessive");
  expect_regex_error("(?i)abc", "inline flags");
  expect_regex_error("[[:alpha:]]", "POSIX");
  expect_regex_error("(abc", "never closed");
  expect_regex_error("abc)", "unmatched ')'");
  expect_regex_error("[abc", "never closed");
  expect_regex_error("*a", "nothing to repeat");
  expect_regex_error("a{3,2}", "n < m");
  expect_regex_error("[z-a]", "out of order");
  expect_regex_error("a^b", "'^' anchor");
  expect_regex_error("a$b", "'$' anchor");
  expect_regex_error("(a*)*", "can match the empty string");
  expect_regex_error("\\u12", "bad hex escape");
  expect_regex_error("a{10001}", "over 10000");
}

// Nesting is bounded where it is parsed (kMaxGroupNesting groups, kMaxStackedQuantifiers in a
// row): a request's pattern 100,000 groups deep, or with 100,000 stacked quantifiers, crashed
// the compiling thread's stack (a segfault of seam generate) before the bound.
TEST(Regex, NestingIsBoundedWhereItIsParsed) {
  auto nested = [](int n) { return std::string(size_t(n), '(') + "a" + std::string(size_t(n), ')'); };
  EXPECT_NO_THROW(regex_to_grammar(nested(kMaxGroupNesting)));
  expect_regex_error(nested(kMaxGroupNesting + 1), "groups nested deeper than 256");
  expect_regex_error(nested(100000), "groups nested deeper than 256");
  EXPECT_NO_THROW(regex_to_grammar("a{2}{1,2}?{3}*"));  // four, a lazy one among them
  expect_regex_error("a{2}{1,2}{3}**", "quantifiers in a row");
  std::string stacked = "a";
  for (int i = 0; i < 100000; ++i) stacked += "{1}";
  expect_regex_error(stacked, "quantifiers in a row");
  expect_regex_error("a" + std::string(100000, '*'), "quantifiers in a row");
}

TEST(Regex, AnchorsAndSearchSemantics) {
  const RegexExpr a = regex_to_expr("^ab$");
  EXPECT_TRUE(a.anchored_start);
  EXPECT_TRUE(a.anchored_end);
  const RegexExpr b = regex_to_expr("ab");
  EXPECT_FALSE(b.anchored_start);
  EXPECT_FALSE(b.anchored_end);
  const RegexExpr c = regex_to_expr("^a|^b");
  EXPECT_TRUE(c.anchored_start);
  expect_regex_error("^a|b", "only some of the alternatives");
}

}  // namespace
}  // namespace seam::grammar::test
