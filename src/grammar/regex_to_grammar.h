// Regular expressions (the ERE/PCRE subset constraint users write) to the
// grammar IR: literals, . (any character but \n), classes with ranges,
// negation and \d \w \s \D \W \S, groups ( ) (?: ) (?<name> ) (?P<name> ),
// alternation, ? * + {m} {m,} {m,n} (lazy forms allowed: same language),
// ^ at the start and $ at the end. Refused with a seam::Error naming the
// construct: backreferences, lookarounds, word boundaries, possessive
// quantifiers, inline flags, POSIX classes.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar_ir.h"

namespace seam::grammar {

// The parsed pattern: one-character leaves (code-point classes) under sequence, alternation and
// counted repetition. regex_node_to_expr lowers it to the IR; regex_length.h bounds its length.
struct RegexNode {
  enum class Kind { kChar, kSeq, kAlt, kRepeat };
  Kind kind = Kind::kSeq;             // an empty kSeq matches the empty string
  std::vector<CodeRange> ranges;      // kChar: sorted, merged
  std::vector<RegexNode> items;       // kSeq / kAlt: the parts; kRepeat: the one body
  int min = 0, max = kUnbounded;      // kRepeat
};

struct RegexAst {
  RegexNode root;
  bool anchored_start = false;  // the pattern began with ^
  bool anchored_end = false;    // the pattern ended with $
};

// Parses a pattern (seam::Error naming the refused construct).
RegexAst parse_regex(std::string_view pattern);
// The IR of a node; json_string: each character as it is written inside a JSON string.
Expr regex_node_to_expr(const RegexNode& n, bool json_string);

struct RegexExpr {
  Expr expr;
  bool anchored_start = false;  // the pattern began with ^
  bool anchored_end = false;    // the pattern ended with $
};

// The language of `pattern` over characters. json_string: produce each
// character as it is written inside a JSON string (escaped where needed).
RegexExpr regex_to_expr(std::string_view pattern, bool json_string = false);

// A grammar whose root matches exactly the strings the whole pattern matches
// (sglang's / vLLM's `regex`: the output is the match, anchors or not).
Grammar regex_to_grammar(std::string_view pattern);

}  // namespace seam::grammar
