#include "grammar/json_text.h"

#include <cstdio>

namespace seam::grammar {

namespace {

std::string escape_of(char32_t c) {
  switch (c) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    default: {
      char buf[8];
      snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      return buf;
    }
  }
}

bool needs_escape(char32_t c) { return c < 0x20 || c == '"' || c == '\\'; }

}  // namespace

std::string json_escape(const std::string& utf8) {
  std::string out;
  for (unsigned char c : utf8) {
    if (needs_escape(c))
      out += escape_of(c);
    else
      out += static_cast<char>(c);
  }
  return out;
}

Expr json_string_char(const std::vector<CodeRange>& ranges) {
  std::vector<CodeRange> plain;
  std::vector<Expr> alts;
  for (const CodeRange& r : ranges) {
    for (char32_t c = r.first; c <= r.second && c < 0x5D; ++c)  // the escaped ones are all below ']'
      if (needs_escape(c)) alts.push_back(literal(escape_of(c)));
    // The range without the characters that need escapes.
    char32_t lo = r.first;
    for (char32_t c = r.first; c <= r.second && c <= '\\' + 1; ++c) {
      if (c <= r.second && needs_escape(c)) {
        if (c > lo) plain.push_back({lo, c - 1});
        lo = c + 1;
      }
    }
    if (lo <= r.second) plain.push_back({lo, r.second});
  }
  if (!plain.empty()) alts.insert(alts.begin(), char_class(plain));
  if (alts.empty()) return char_class({});  // matches nothing
  return choice(std::move(alts));
}

Expr json_any_string_char() {
  const Expr hex = char_class({{'0', '9'}, {'a', 'f'}, {'A', 'F'}});
  const Expr hex_not_d = char_class({{'0', '9'}, {'a', 'c'}, {'e', 'f'}, {'A', 'C'}, {'E', 'F'}});
  const Expr low = char_class({{'0', '7'}});  // \uD0XX..\uD7XX are not surrogates
  // \u escapes outside D800-DFFF: first digit not d/D, or d/D followed by 0-7.
  Expr u = choice({seq({hex_not_d, hex, hex, hex}), seq({char_class({{'d', 'd'}, {'D', 'D'}}), low, hex, hex})});
  Expr escape = seq(
      {literal("\\"),
       choice({char_class(
                   {{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'b', 'b'}, {'f', 'f'}, {'n', 'n'}, {'r', 'r'}, {'t', 't'}}),
               seq({literal("u"), std::move(u)})})});
  return choice({char_class({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}, true), std::move(escape)});
}

}  // namespace seam::grammar
