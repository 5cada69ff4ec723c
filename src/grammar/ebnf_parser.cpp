#include "grammar/ebnf_parser.h"

#include <map>

#include "core/error.h"
#include "grammar/char_class_parser.h"

namespace seam::grammar {

namespace {

class EbnfParser {
 public:
  explicit EbnfParser(std::string_view text) : s_(text) {}

  Grammar run(const std::string& root) {
    Grammar g;
    g.root = root;
    skip_space();
    while (pos_ < s_.size()) {
      const size_t at = pos_;
      const std::string name = parse_name();
      if (name.empty()) fail(at, "expected a rule name");
      skip_space();
      if (s_.substr(pos_, 3) != "::=") fail(pos_, "expected '::=' after rule name '" + name + "'");
      pos_ += 3;
      if (defined_.count(name)) fail(at, "rule '" + name + "' is defined twice");
      defined_[name] = at;
      Expr body = parse_alternatives(false);
      g.add_rule(name, std::move(body));
      skip_space();
    }
    for (const auto& [name, at] : referenced_)
      if (!defined_.count(name)) fail(at, "undefined rule '" + name + "'");
    if (!defined_.count(root)) fail(s_.size(), "there is no rule '" + root + "' (the start rule)");
    return g;
  }

 private:
  [[noreturn]] void fail(size_t at, const std::string& what) const { throw Error(error_text(at, what)); }

  std::string error_text(size_t at, const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return "ebnf: line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + what;
  }

  void skip_space() {
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  static bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.';
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (pos_ < s_.size() && name_char(s_[pos_]) && !(s_[pos_] == '.' && pos_ == start)) ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }

  // Whether a rule definition (`name ::=`) starts at pos_.
  bool at_rule_start() {
    const size_t save = pos_;
    const std::string name = parse_name();
    skip_space();
    const bool yes = !name.empty() && s_.substr(pos_, 3) == "::=";
    pos_ = save;
    return yes;
  }

  Expr parse_alternatives(bool nested) {
    std::vector<Expr> alts;
    alts.push_back(parse_sequence(nested));
    for (;;) {
      skip_space();
      if (pos_ < s_.size() && s_[pos_] == '|') {
        ++pos_;
        alts.push_back(parse_sequence(nested));
      } else {
        break;
      }
    }
    return choice(std::move(alts));
  }

  Expr parse_sequence(bool nested) {
    std::vector<Expr> items;
    for (;;) {
      skip_space();
      if (pos_ >= s_.size()) break;
      const char c = s_[pos_];
      if (c == '|' || c == ')') {
        if (c == ')' && !nested) fail(pos_, "unmatched ')'");
        break;
      }
      if (name_char(c) && c != '.' && at_rule_start()) {
        if (nested) fail(pos_, "expected ')' before the next rule");
        break;
      }
      items.push_back(parse_postfix(parse_primary()));
    }
    return seq(std::move(items));
  }

  Expr parse_primary() {
    const size_t at = pos_;
    const char c = s_[pos_];
    if (c == '"' || c == '\'') return parse_literal(c);
    if (c == '[') return parse_class();
    if (c == '.') {
      ++pos_;
      return any_char();
    }
    if (c == '(') {
      ++pos_;
      skip_space();
      if (pos_ < s_.size() && s_[pos_] == '=') fail(pos_, "lookahead assertions '(= ...)' are not supported");
      if (++group_depth_ > kMaxGroupNesting) fail(at, "groups nested deeper than " + std::to_string(kMaxGroupNesting));
      Expr inner = parse_alternatives(true);
      --group_depth_;
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != ')') fail(at, "'(' is never closed");
      ++pos_;
      return inner;
    }
    const std::string name = parse_name();
    if (name.empty()) fail(at, std::string("unexpected character '") + c + "'");
    referenced_.emplace(name, at);
    return ref(name);
  }

  // Postfix operators, which may follow after spaces (as in GBNF).
  Expr parse_postfix(Expr e) {
    for (int stacked = 0;; ++stacked) {
      const size_t before = pos_;
      skip_blanks();
      if (pos_ >= s_.size() || (s_[pos_] != '*' && s_[pos_] != '+' && s_[pos_] != '?' && s_[pos_] != '{')) {
        pos_ = before;
        return e;
      }
      if (stacked >= kMaxStackedQuantifiers)
        fail(pos_, "more than " + std::to_string(kMaxStackedQuantifiers) + " repetition operators in a row (group the item)");
      const char c = s_[pos_];
      if (c == '*') {
        ++pos_;
        e = star(std::move(e));
      } else if (c == '+') {
        ++pos_;
        e = plus(std::move(e));
      } else if (c == '?') {
        ++pos_;
        e = optional(std::move(e));
      } else if (c == '{') {
        const size_t at = pos_++;
        const int lo = parse_int(at);
        int hi = lo;
        if (pos_ < s_.size() && s_[pos_] == ',') {
          ++pos_;
          skip_blanks();
          hi = pos_ < s_.size() && s_[pos_] == '}' ? kUnbounded : parse_int(at);
        }
        skip_blanks();
        if (pos_ >= s_.size() || s_[pos_] != '}') fail(at, "expected '}' to close the repetition");
        ++pos_;
        if (hi != kUnbounded && hi < lo) fail(at, "repetition {m,n} with n < m");
        if (lo > kMaxRepeat || hi > kMaxRepeat) fail(at, "repetition count over " + std::to_string(kMaxRepeat));
        e = repeat(std::move(e), lo, hi);
      } else {
        return e;
      }
    }
  }

  void skip_blanks() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
  }

  int parse_int(size_t at) {
    skip_blanks();
    const size_t start = pos_;
    long v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9' && v <= kMaxRepeat) v = v * 10 + (s_[pos_++] - '0');
    if (pos_ == start) fail(at, "expected a number in the repetition");
    skip_blanks();
    return static_cast<int>(v);
  }

  // One character of a literal or class (escapes decoded), as a code point.
  char32_t parse_char() {
    const size_t at = pos_;
    unsigned char c = static_cast<unsigned char>(s_[pos_]);
    if (c == '\\') {
      if (++pos_ >= s_.size()) fail(at, "unfinished escape");
      const char e = s_[pos_++];
      switch (e) {
        case 'n':
          return '\n';
        case 'r':
          return '\r';
        case 't':
          return '\t';
        case 'f':
          return '\f';
        case 'v':
          return '\v';
        case '0':
          return 0;
        case 'x':
          return parse_hex(at, 2);
        case 'u':
          return parse_hex(at, 4);
        case 'U':
          return parse_hex(at, 8);
        case '\\':
        case '"':
        case '\'':
        case '[':
        case ']':
        case '-':
        case '^':
        case '/':
        case '.':
          return static_cast<char32_t>(e);
        default:
          fail(at, std::string("unknown escape '\\") + e + "'");
      }
    }
    return decode_utf8_char(s_, pos_, error_text_fn());
  }

  SyntaxErrorText error_text_fn() const {
    return [this](size_t at, const std::string& what) { return error_text(at, what); };
  }

  char32_t parse_hex(size_t at, int n) {
    char32_t v = 0;
    for (int i = 0; i < n; ++i, ++pos_) {
      if (pos_ >= s_.size()) fail(at, "unfinished hex escape");
      const int d = hex_digit_value(s_[pos_]);
      if (d < 0) fail(at, "bad hex digit in escape");
      v = v * 16 + static_cast<char32_t>(d);
    }
    if (!is_escapable_code_point(v)) fail(at, "escape is not a valid code point");
    return v;
  }

  Expr parse_literal(char quote) {
    const size_t at = pos_++;
    std::string text;
    for (;;) {
      if (pos_ >= s_.size() || s_[pos_] == '\n') fail(at, "unterminated string literal");
      if (s_[pos_] == quote) {
        ++pos_;
        break;
      }
      append_utf8(text, parse_char());
    }
    return literal(std::move(text));
  }

  // GBNF classes: ']' always closes (even first), a class ends at the line's end, and every
  // member is one character (parse_char: no set escapes such as \d in this dialect).
  Expr parse_class() {
    const ClassSyntax syntax{.leading_bracket_is_literal = false,
                             .newline_ends_class = true,
                             .reject_posix_classes = false,
                             .unterminated_message = "unterminated character class"};
    ParsedClass parsed = parse_bracket_class(
        s_, pos_, syntax,
        [this](std::vector<CodeRange>&, char32_t& ch) {
          ch = parse_char();
          return false;
        },
        error_text_fn());
    return char_class(std::move(parsed.ranges), parsed.negated);
  }

  static void append_utf8(std::string& out, char32_t c) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }

  static constexpr int kMaxRepeat = 10000;
  std::string_view s_;
  size_t pos_ = 0;
  int group_depth_ = 0;  // ( ) open around the current position (kMaxGroupNesting)
  std::map<std::string, size_t> defined_;
  std::map<std::string, size_t> referenced_;  // name -> first use
};

}  // namespace

Grammar parse_ebnf(std::string_view text, const std::string& root_rule) { return EbnfParser(text).run(root_rule); }

}  // namespace seam::grammar
