// Parser: tokens -> statements, by jinja2's grammar (operator precedence,
// filters and tests binding tighter than arithmetic, inline if, tuples).
// Unknown tags (extends, include, import, block: they need a loader) are a
// syntax error naming the tag.
#pragma once
#include <vector>

#include "jinja/ast.h"
#include "jinja/lexer.h"

namespace seam::jinja {

// Throws TemplateError(syntax) with the line number of the offending token.
Body parse(const std::vector<Token>& tokens);

}  // namespace seam::jinja
