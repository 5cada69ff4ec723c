// Bracket character classes (`[...]`, `[^...]`, ranges `a-z`) and the character-level
// pieces both grammar front ends share: UTF-8 decoding of one source character and hex
// digits. The EBNF (ebnf_parser.cpp) and regex (regex_to_grammar.cpp) dialects differ in
// their escapes and in a few class rules; those differences are the parameters here, so
// each dialect states them in one place.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar_ir.h"

namespace seam::grammar {

// Turns (offset, what) into the dialect's full error message; the caller throws seam::Error with it.
using SyntaxErrorText = std::function<std::string(size_t at, const std::string& what)>;

// Reads one class member at pos (a backslash escape or a literal character) and advances pos:
// true with `set` filled for a set escape (`\d`), false with `ch` for a single character.
using ClassMemberReader = std::function<bool(std::vector<CodeRange>& set, char32_t& ch)>;

// How a dialect's bracket class differs from the other's.
struct ClassSyntax {
  // Regex (PCRE): a ']' right after '[' or '[^' is a literal; EBNF: it closes an empty class.
  bool leading_bracket_is_literal = false;
  // EBNF: a class may not span lines (a newline inside it reports it unterminated).
  bool newline_ends_class = false;
  // Regex: reject POSIX classes ([:alpha:]) rather than read them as characters.
  bool reject_posix_classes = false;
  // The error when the input ends (or, per newline_ends_class, the line ends) inside the class.
  std::string unterminated_message;
};

struct ParsedClass {
  std::vector<CodeRange> ranges;  // as written: any order, overlaps allowed
  bool negated = false;
};

// Parses a class starting at the '[' at pos; on return pos is just past its ']'.
// Invariant: a range's ends are single characters (lo <= hi); a set escape may stand
// alone in a class but never as a range end. Errors throw seam::Error (text via `error`),
// reported at the '['.
ParsedClass parse_bracket_class(std::string_view s, size_t& pos, const ClassSyntax& syntax,
                                const ClassMemberReader& read_member, const SyntaxErrorText& error);

// Decodes the UTF-8 character at pos as a code point and advances past it; bad UTF-8
// (or a sequence cut off by the end of s) throws seam::Error with error(pos, "invalid UTF-8").
char32_t decode_utf8_char(std::string_view s, size_t& pos, const SyntaxErrorText& error);

// The value of a hex digit, or -1 when h is not one.
int hex_digit_value(char h);

// Whether v may be written by an escape: within Unicode and not a surrogate.
inline bool is_escapable_code_point(char32_t v) { return v <= kMaxCodePoint && !(v >= 0xD800 && v <= 0xDFFF); }

}  // namespace seam::grammar
