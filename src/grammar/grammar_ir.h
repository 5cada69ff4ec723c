// The grammar IR every front end produces (EBNF text, regex, JSON Schema): named
// rules over expressions -- UTF-8 literals, code-point classes, sequence, choice,
// bounded/unbounded repetition and rule references, the forms GBNF expresses.
// It is a plain value; lower_grammar (grammar_program.h) turns it into the flat
// byte-level program the matcher runs.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace seam::grammar {

// Code points are char32_t; ranges are inclusive.
using CodeRange = std::pair<char32_t, char32_t>;
inline constexpr char32_t kMaxCodePoint = 0x10FFFF;

struct Expr {
  enum class Kind { kEmpty, kLiteral, kClass, kSeq, kChoice, kRepeat, kRef };
  Kind kind = Kind::kEmpty;
  std::string text;               // kLiteral: the UTF-8 bytes; kRef: the rule name
  std::vector<CodeRange> ranges;  // kClass: sorted, merged, non-negated ranges
  std::vector<Expr> items;        // kSeq / kChoice: the parts; kRepeat: the one body
  int min = 0;                    // kRepeat: at least min ...
  int max = -1;                   // ... and at most max repetitions; -1 = unbounded
};

inline constexpr int kUnbounded = -1;

// How deep the text front ends (regex, EBNF) let expressions nest: groups in groups, and
// quantifiers stacked on one item. The parsers and every later pass (lowering, the length
// intersection, printing) recurse on that depth, so input past it would overflow the stack of
// whichever thread compiles a request's constraint: it is a parse error instead.
inline constexpr int kMaxGroupNesting = 256;
inline constexpr int kMaxStackedQuantifiers = 4;

Expr empty();
Expr literal(std::string utf8);
// A class from ranges (any order, overlapping allowed); negated = the complement
// within [0, U+10FFFF] minus the surrogates.
Expr char_class(std::vector<CodeRange> ranges, bool negated = false);
Expr any_char();  // any code point
Expr seq(std::vector<Expr> items);
Expr choice(std::vector<Expr> items);
Expr repeat(Expr body, int min, int max);
Expr star(Expr body);
Expr plus(Expr body);
Expr optional(Expr body);
Expr ref(std::string rule_name);

struct Rule {
  std::string name;
  Expr body;
};

// A length-bounded pattern's state rule (regex_length.h) as count_band.h needs it: states of one
// family (one pattern's one character position) differ only in their count of characters so far,
// and those whose counts lie in the band [min_len, band_hi - T] behave alike for any token of up to
// T bytes. Kept beside the rules by name; the lowering carries it into the program by rule id.
struct CountBandState {
  std::string rule;    // the state rule's name
  std::string family;  // the same string for every state of one pattern's one position
  int count = 0;       // characters matched so far
  int min_len = 0;     // the pattern's minLength
  int band_hi = 0;     // maxLength minus the most characters any live position still needs
};

struct Grammar {
  std::vector<Rule> rules;  // read and change bodies freely; add only through add_rule (the name index)
  std::string root = "root";
  // Band facts of some rules (count_band.h); rules named here must exist when the grammar is lowered.
  std::vector<CountBandState> count_band_states;

  // Adds a rule; a name already present is an error (seam::Error).
  void add_rule(std::string name, Expr body);
  bool has_rule(const std::string& name) const;
  // The rule of that name, or null.
  Rule* find_rule(const std::string& name);
  // A fresh rule name beginning with `stem` (stem, stem_1, stem_2, ...).
  std::string fresh_name(const std::string& stem) const;

 private:
  // Name -> index into rules, and the next suffix to try a stem: front ends add up to hundreds of
  // thousands of rules (a request's EBNF, a length-bounded pattern), and a scan a name made that
  // quadratic (100,000 rules of EBNF took 13 s to parse).
  std::unordered_map<std::string, size_t> index_;
  mutable std::unordered_map<std::string, int> next_suffix_;
};

// EBNF text of an expression / a grammar (GBNF syntax), for errors and debugging.
std::string to_ebnf(const Expr& e);
std::string to_ebnf(const Grammar& g);

}  // namespace seam::grammar
