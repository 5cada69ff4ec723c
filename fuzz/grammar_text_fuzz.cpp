// Structured output's text front ends on untrusted text, as a request's `regex` / `ebnf` (sglang,
// vLLM's guided_regex / guided_grammar) brings it: the first byte picks the regex or the EBNF
// parser, the rest is the text; whatever parses is lowered to a byte program and its start
// state expanded and stepped over a few bytes (the matcher's call expansion). Any bytes either
// do all that or throw seam::Error; a crash (a stack overflowed by nesting or long rule chains,
// the session-31 findings), a hang (libFuzzer's -timeout) or memory past -rss_limit_mb is a
// finding.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "fuzz_util.h"
#include "grammar/ebnf_parser.h"
#include "grammar/grammar_program.h"
#include "grammar/parser_stacks.h"
#include "grammar/regex_to_grammar.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace seam;
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    const grammar::Grammar g = (data[0] & 1) ? grammar::parse_ebnf(text) : grammar::regex_to_grammar(text);
    const grammar::GrammarProgram p = grammar::lower_grammar(g);
    grammar::StackArena arena;
    grammar::StackStepper stepper(p, arena);
    grammar::ParserState state = stepper.start(p.root_rule, grammar::kNoParent);
    stepper.advance_all(state, "a0{\"");
  } catch (const Error&) {
  } catch (const std::exception& e) {
    fuzz::finding("the regex / EBNF front end threw a non-seam::Error", e.what());
  }
  return 0;
}
