// The EBNF dialect (GBNF / xgrammar): what parses, what the grammars accept,
// and the errors with their line and column.
#include "core/error.h"
#include "grammar/ebnf_parser.h"
#include "grammar/grammar_program.h"
#include "grammar_test_util.h"

namespace seam::grammar::test {
namespace {

bool ebnf_accepts(const std::string& grammar, const std::string& text) {
  auto g = std::make_shared<const CompiledGrammar>(parse_ebnf(grammar), test_vocab("stories260K").vocab,
                                                   CompileOptions{false});
  GrammarMatcher m(g);
  return m.accept_bytes(text) && m.can_end();
}

TEST(Ebnf, GbnfFeatures) {
  const std::string g = R"(# a comment line
root   ::= greeting " " name ("," " "? name)* punct?   # trailing comment
greeting ::= "hello" | 'hi'
name ::= [A-Z] [a-z]{1,5}
punct ::= [.!] | "\x3F"
)";
  EXPECT_TRUE(ebnf_accepts(g, "hello Bob"));
  EXPECT_TRUE(ebnf_accepts(g, "hi Al,Bo, Cy!"));
  EXPECT_TRUE(ebnf_accepts(g, "hi Al?"));
  EXPECT_FALSE(ebnf_accepts(g, "hi A"));
  EXPECT_FALSE(ebnf_accepts(g, "hi Abcdefg"));
  EXPECT_FALSE(ebnf_accepts(g, "hey Bob"));
  EXPECT_FALSE(ebnf_accepts(g, "hi Al,  Bo"));
}

TEST(Ebnf, AlternativesAcrossLinesAndNesting) {
  const std::string g = "root ::= (\n  \"a\"\n  | \"b\" (\"c\" | \"d\")+\n)\n  | \"e\"\nother ::= \"x\"";
  EXPECT_TRUE(ebnf_accepts(g, "a"));
  EXPECT_TRUE(ebnf_accepts(g, "bcdc"));
  EXPECT_TRUE(ebnf_accepts(g, "e"));
  EXPECT_FALSE(ebnf_accepts(g, "x"));
}

TEST(Ebnf, EscapesClassesAndUnicode) {
  EXPECT_TRUE(ebnf_accepts(R"(root ::= "\"" [^"\\\n]* "\"")", "\"a b'c\""));
  EXPECT_FALSE(ebnf_accepts(R"(root ::= "\"" [^"\\\n]* "\"")", "\"a\"b\""));
  EXPECT_TRUE(ebnf_accepts(R"(root ::= [\u00e0-\u00ff]+ "\U0001F600")", "\xC3\xA0\xC3\xBF\xF0\x9F\x98\x80"));
  EXPECT_TRUE(ebnf_accepts(R"(root ::= "é" . [\-\]])", "\xC3\xA9\xE4\xB8\x80-"));
  EXPECT_TRUE(ebnf_accepts(R"(root ::= x{3} x{1,} x{0,1}
x ::= "a")",
                           "aaaa"));
  EXPECT_FALSE(ebnf_accepts(R"(root ::= x{3} x{1,}
x ::= "a")",
                            "aaa"));
  // Right recursion (a JSON-like nesting) runs; the stack set handles it.
  EXPECT_TRUE(ebnf_accepts(R"G(root ::= "(" root ")" | "")G", "((()))"));
  EXPECT_FALSE(ebnf_accepts(R"G(root ::= "(" root ")" | "")G", "(()"));
}

void expect_ebnf_error(const std::string& text, const std::string& needle) {
  try {
    lower_grammar(parse_ebnf(text));
    ADD_FAILURE() << "no error for " << text;
  } catch (const ::seam::Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Ebnf, ParseErrorsNameLineAndColumn) {
  expect_ebnf_error("root ::= \"abc", "line 1, column 10: unterminated string literal");
  expect_ebnf_error("root ::= a\na ::= [abc", "line 2, column 7: unterminated character class");
  expect_ebnf_error("root ::= \"a\"\n  b\n", "line 2, column 3: undefined rule 'b'");
  expect_ebnf_error("root ::= (\"a\" | \"b\"", "line 1, column 10: '(' is never closed");
  expect_ebnf_error("root ::= \"a\")", "line 1, column 13: unmatched ')'");
  expect_ebnf_error("root := \"a\"", "line 1, column 6: expected '::='");
  expect_ebnf_error("root ::= \"a\"\nroot ::= \"b\"", "line 2, column 1: rule 'root' is defined twice");
  expect_ebnf_error("start ::= \"a\"", "there is no rule 'root'");
  expect_ebnf_error("root ::= \"a\"{2,1}", "line 1, column 13: repetition {m,n} with n < m");
  expect_ebnf_error("root ::= \"\\q\"", "line 1, column 11: unknown escape");
  expect_ebnf_error("root ::= [z-a]", "line 1, column 10: character range out of order");
  expect_ebnf_error("root ::= (= \"a\") \"b\"", "lookahead");
  expect_ebnf_error("root ::= @", "line 1, column 10: unexpected character '@'");
  expect_ebnf_error("root ::= root \"a\" | \"b\"", "left recursion is not supported (root -> root)");
  expect_ebnf_error("root ::= a\na ::= b \"x\"\nb ::= \"\" | a", "left recursion");
  expect_ebnf_error("root ::= (\"a\"?)*", "a repeated expression can match the empty string");
}

// Nesting is bounded where it is parsed, as in the regex front end (a grammar 100,000 groups
// deep crashed the compiling thread's stack before the bound).
TEST(Ebnf, NestingIsBoundedWhereItIsParsed) {
  auto nested = [](int n) { return "root ::= " + std::string(size_t(n), '(') + "\"a\"" + std::string(size_t(n), ')'); };
  EXPECT_NO_THROW(parse_ebnf(nested(kMaxGroupNesting), "root"));
  expect_ebnf_error(nested(kMaxGroupNesting + 1), "groups nested deeper than 256");
  expect_ebnf_error(nested(100000), "groups nested deeper than 256");
  EXPECT_NO_THROW(parse_ebnf("root ::= \"a\"{2} * ? +", "root"));
  expect_ebnf_error("root ::= \"a\"*+?*+", "repetition operators in a row");
  expect_ebnf_error("root ::= \"a\"" + std::string(100000, '*'), "repetition operators in a row");
}

// Grammars as long as a request can make them: a chain of 100,000 rules each calling the next
// (expanding its first position, and the left-recursion check, recursed once a rule and
// overflowed the stack; adding a rule scanned every name, 13 s to parse it), the same chain
// nullable (the nullable pass took a sweep a rule), and closed into a cycle (left recursion,
// reported with the cycle's first rules only).
TEST(Ebnf, LongChainsOfRulesCompileWithoutRecursion) {
  constexpr int n = 100000;
  auto chain = [&](const std::string& last, bool nullable) {
    std::string t = "root ::= r0\n";
    for (int i = 0; i < n; ++i)
      t += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + (nullable ? " | \"b\"" : "") + "\n";
    return t + "r" + std::to_string(n) + " ::= " + last + "\n";
  };
  const auto vocab = test_vocab("stories260K").vocab;
  for (bool nullable : {false, true}) {
    SCOPED_TRACE(nullable ? "nullable" : "plain");
    auto g = std::make_shared<const CompiledGrammar>(parse_ebnf(chain("\"a\"", nullable), "root"), vocab,
                                                     CompileOptions{false});
    GrammarMatcher m(g);
    EXPECT_TRUE(m.accept_bytes("a"));
    EXPECT_TRUE(m.can_end());
    GrammarMatcher m2(g);
    EXPECT_EQ(m2.accept_bytes("b"), nullable);
  }
  expect_ebnf_error(chain("r0 \"a\"", false), "left recursion is not supported (r0 -> r1 -> r2 -> r3 -> r4 -> r5 -> r6 -> r7 -> ... -> r0)");
}

}  // namespace
}  // namespace seam::grammar::test
