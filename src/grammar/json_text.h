// Pieces of JSON text as grammar expressions, shared by the regex front end
// (a `pattern` matches the decoded string, the grammar produces its JSON
// encoding) and the JSON Schema front end.
#pragma once
#include <string>
#include <vector>

#include "grammar/grammar_ir.h"

namespace seam::grammar {

// The JSON encoding of the text `utf8` inside a string (no quotes), with the
// canonical escapes: \" \\ \n \r \t \b \f and \u00XX for other controls.
std::string json_escape(const std::string& utf8);

// One character from `ranges` as it appears inside a JSON string: the
// characters that need no escape as a class, the others as their canonical escape.
Expr json_string_char(const std::vector<CodeRange>& ranges);

// Any one character of a JSON string: an unescaped character or any escape
// (\uXXXX outside the surrogates, so one escape is always one code point).
Expr json_any_string_char();

}  // namespace seam::grammar
