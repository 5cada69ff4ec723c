#include "grammar/char_class_parser.h"

#include "core/error.h"

namespace seam::grammar {

ParsedClass parse_bracket_class(std::string_view s, size_t& pos, const ClassSyntax& syntax,
                                const ClassMemberReader& read_member, const SyntaxErrorText& error) {
  const size_t at = pos++;
  ParsedClass out;
  if (pos < s.size() && s[pos] == '^') {
    out.negated = true;
    ++pos;
  }
  bool first = true;
  for (;;) {
    if (pos >= s.size() || (syntax.newline_ends_class && s[pos] == '\n'))
      throw Error(error(at, syntax.unterminated_message));
    if (s[pos] == ']' && !(first && syntax.leading_bracket_is_literal)) {
      ++pos;
      break;
    }
    if (syntax.reject_posix_classes && s.substr(pos).starts_with("[:"))
      throw Error(error(pos, "POSIX classes ([:name:]) are not supported"));
    first = false;
    std::vector<CodeRange> set;
    char32_t lo = 0;
    if (read_member(set, lo)) {
      out.ranges.insert(out.ranges.end(), set.begin(), set.end());
      continue;
    }
    char32_t hi = lo;
    // A '-' just before the closing ']' is a literal '-', not a range.
    if (pos + 1 < s.size() && s[pos] == '-' && s[pos + 1] != ']') {
      ++pos;
      if (read_member(set, hi)) throw Error(error(at, "a class escape cannot end a range"));
      if (hi < lo) throw Error(error(at, "character range out of order"));
    }
    out.ranges.push_back({lo, hi});
  }
  return out;
}

char32_t decode_utf8_char(std::string_view s, size_t& pos, const SyntaxErrorText& error) {
  const size_t at = pos;
  const unsigned char c = static_cast<unsigned char>(s[pos]);
  const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (n == 0 || pos + n > s.size()) throw Error(error(at, "invalid UTF-8"));
  char32_t cp = n == 1 ? c : c & (0x7F >> n);
  for (int i = 1; i < n; ++i) {
    const unsigned char d = static_cast<unsigned char>(s[pos + i]);
    if ((d & 0xC0) != 0x80) throw Error(error(at, "invalid UTF-8"));
    cp = (cp << 6) | (d & 0x3F);
  }
  pos += n;
  return cp;
}

int hex_digit_value(char h) {
  return h >= '0' && h <= '9'   ? h - '0'
         : h >= 'a' && h <= 'f' ? h - 'a' + 10
         : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                : -1;
}

}  // namespace seam::grammar
