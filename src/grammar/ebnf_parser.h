// The EBNF dialect of GBNF (llama.cpp) and xgrammar, as sglang's `ebnf` and
// vLLM's `grammar` fields carry it:
//   root ::= item ("," item)*      # a comment
//   item ::= "literal" | 'literal' | [a-z0-9_] | [^"\\] | . | name | ( ... )
// with postfix * + ? {m} {m,} {m,n}. Rules end where the next `name ::=`
// begins, so an alternative may continue on the next line. Literals and
// classes take \n \r \t \\ \" \' \] \- \xHH \uHHHH \UHHHHHHHH escapes.
// Errors are seam::Error with "ebnf: line L, column C: ...".
#pragma once
#include <string>
#include <string_view>

#include "grammar/grammar_ir.h"

namespace seam::grammar {

Grammar parse_ebnf(std::string_view text, const std::string& root_rule = "root");

}  // namespace seam::grammar
