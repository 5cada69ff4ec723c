// Lexer: template source -> tokens, with jinja2's whitespace control applied
// to the text between tags (so the parser never sees it):
//   {%- / -%} (and {{- -}}, {#- -#}) strip all whitespace before / after the tag;
//   trim_blocks drops the first newline after a block or comment tag;
//   lstrip_blocks drops spaces and tabs before a block or comment tag that
//   starts a line; {%+ / +%} turn those two off for one tag.
// keep_trailing_newline=false drops one newline at the very end of the source,
// and \r\n / \r are read as \n, as jinja2 does.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace seam::jinja {

enum class TokenType { text, var_begin, var_end, block_begin, block_end, name, string, integer, floating, op, eof };

struct Token {
  TokenType type;
  std::string value;  // text, name, string literal (unescaped), operator
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

// Throws TemplateError(syntax) for an unclosed tag, comment or string.
std::vector<Token> tokenize(const std::string& source, const LexOptions& options);

}  // namespace seam::jinja
