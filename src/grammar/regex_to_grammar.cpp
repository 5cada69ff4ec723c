#include "grammar/regex_to_grammar.h"

#include "core/error.h"
#include "grammar/char_class_parser.h"
#include "grammar/json_text.h"

namespace seam::grammar {

namespace {

const std::vector<CodeRange> kDigit = {{'0', '9'}};
const std::vector<CodeRange> kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const std::vector<CodeRange> kSpace = {{'\t', '\r'}, {' ', ' '}};

std::vector<CodeRange> complement(const std::vector<CodeRange>& r) { return char_class(r, true).ranges; }

class RegexParser {
 public:
  explicit RegexParser(std::string_view s) : s_(s) {}

  RegexAst run() {
    RegexAst out;
    out.root = parse_alternation(0);
    if (pos_ < s_.size()) fail(pos_, "unmatched ')'");
    // Search semantics (JSON Schema's pattern) need each end anchored in every
    // top-level alternative or in none.
    if ((n_start_anchors_ != 0 && n_start_anchors_ != n_alternatives_) ||
        (n_end_anchors_ != 0 && n_end_anchors_ != n_alternatives_))
      fail(0, "anchors on only some of the alternatives are not supported");
    out.anchored_start = n_start_anchors_ > 0;
    out.anchored_end = n_end_anchors_ > 0;
    return out;
  }

 private:
  [[noreturn]] void fail(size_t at, const std::string& what) const { throw Error(error_text(at, what)); }

  std::string error_text(size_t at, const std::string& what) const {
    return "regex: " + what + " at offset " + std::to_string(at) + " of '" + std::string(s_) + "'";
  }

  SyntaxErrorText error_text_fn() const {
    return [this](size_t at, const std::string& what) { return error_text(at, what); };
  }

  static RegexNode chars(const std::vector<CodeRange>& ranges) {
    RegexNode n;
    n.kind = RegexNode::Kind::kChar;
    n.ranges = char_class(ranges).ranges;
    return n;
  }
  static RegexNode one(char32_t c) { return chars({{c, c}}); }
  static RegexNode node(RegexNode::Kind kind, std::vector<RegexNode> items) {
    if (kind != RegexNode::Kind::kSeq && items.size() == 1) return std::move(items[0]);
    RegexNode n;
    n.kind = kind;
    n.items = std::move(items);
    return n;
  }

  RegexNode parse_alternation(int depth) {
    std::vector<RegexNode> alts;
    alts.push_back(parse_concat(depth));
    while (pos_ < s_.size() && s_[pos_] == '|') {
      ++pos_;
      alts.push_back(parse_concat(depth));
    }
    return node(RegexNode::Kind::kAlt, std::move(alts));
  }

  RegexNode parse_concat(int depth) {
    std::vector<RegexNode> items;
    if (depth == 0) {
      ++n_alternatives_;
      if (pos_ < s_.size() && s_[pos_] == '^') {
        ++n_start_anchors_;
        ++pos_;
      }
    }
    while (pos_ < s_.size() && s_[pos_] != '|' && s_[pos_] != ')') {
      if (s_[pos_] == '$') {
        // Only at the very end (of the pattern or of a top-level alternative).
        const size_t at = pos_++;
        if (depth > 0 || (pos_ < s_.size() && s_[pos_] != '|'))
          fail(at, "'$' anchor inside the pattern is not supported");
        ++n_end_anchors_;
        continue;
      }
      if (s_[pos_] == '^') fail(pos_, "'^' anchor inside the pattern is not supported");
      items.push_back(parse_quantified(depth));
    }
    if (depth == 0 && pos_ < s_.size() && s_[pos_] == ')') fail(pos_, "unmatched ')'");
    return node(RegexNode::Kind::kSeq, std::move(items));
  }

  RegexNode parse_quantified(int depth) {
    RegexNode e = parse_atom(depth);
    for (int stacked = 0;; ++stacked) {
      if (pos_ >= s_.size()) return e;
      const size_t at = pos_;
      const char c = s_[pos_];
      int lo, hi;
      if (c == '*') {
        lo = 0, hi = kUnbounded, ++pos_;
      } else if (c == '+') {
        lo = 1, hi = kUnbounded, ++pos_;
      } else if (c == '?') {
        lo = 0, hi = 1, ++pos_;
      } else if (c == '{' && parse_braces(lo, hi)) {
      } else {
        return e;
      }
      if (pos_ < s_.size() && s_[pos_] == '?')
        ++pos_;  // lazy: the same set of strings
      else if (pos_ < s_.size() && s_[pos_] == '+')
        fail(pos_, "possessive quantifiers are not supported");
      if (hi != kUnbounded && hi < lo) fail(at, "quantifier {m,n} with n < m");
      if (stacked >= kMaxStackedQuantifiers)
        fail(at, "more than " + std::to_string(kMaxStackedQuantifiers) + " quantifiers in a row (group the item)");
      if (lo > kMaxRepeat || hi > kMaxRepeat) fail(at, "quantifier count over " + std::to_string(kMaxRepeat));
      RegexNode r;
      r.kind = RegexNode::Kind::kRepeat;
      r.items.push_back(std::move(e));
      r.min = lo;
      r.max = hi;
      e = std::move(r);
    }
  }

  // {m} {m,} {m,n}; false (and pos_ unchanged) when the brace is a literal, as in PCRE.
  bool parse_braces(int& lo, int& hi) {
    size_t p = pos_ + 1;
    auto number = [&](int& v) {
      const size_t start = p;
      long x = 0;
      while (p < s_.size() && s_[p] >= '0' && s_[p] <= '9') {
        x = std::min<long>(x * 10 + (s_[p] - '0'), 1L << 30);
        ++p;
      }
      v = static_cast<int>(x);
      return p > start;
    };
    if (!number(lo)) return false;
    hi = lo;
    if (p < s_.size() && s_[p] == ',') {
      ++p;
      if (!number(hi)) hi = kUnbounded;
    }
    if (p >= s_.size() || s_[p] != '}') return false;
    pos_ = p + 1;
    return true;
  }

  RegexNode parse_atom(int depth) {
    const size_t at = pos_;
    const char c = s_[pos_];
    switch (c) {
      case '(': {
        ++pos_;
        if (pos_ < s_.size() && s_[pos_] == '?') {
          const std::string_view rest = s_.substr(pos_);
          if (rest.starts_with("?:")) {
            pos_ += 2;
          } else if (rest.starts_with("?P<") ||
                     (rest.starts_with("?<") && !rest.starts_with("?<=") && !rest.starts_with("?<!"))) {
            const size_t close = s_.find('>', pos_);
            if (close == std::string_view::npos) fail(at, "unterminated group name");
            pos_ = close + 1;
          } else if (rest.starts_with("?=") || rest.starts_with("?!") || rest.starts_with("?<=") ||
                     rest.starts_with("?<!")) {
            fail(at, "lookaround assertions are not supported");
          } else {
            fail(at, "inline flags and other (?...) groups are not supported");
          }
        }
        if (depth + 1 > kMaxGroupNesting)
          fail(at, "groups nested deeper than " + std::to_string(kMaxGroupNesting));
        RegexNode inner = parse_alternation(depth + 1);
        if (pos_ >= s_.size() || s_[pos_] != ')') fail(at, "'(' is never closed");
        ++pos_;
        return inner;
      }
      case '[':
        return chars(parse_class());
      case '.':
        ++pos_;
        return chars(complement({{'\n', '\n'}}));
      case '\\':
        return parse_escape_atom();
      case '*':
      case '+':
      case '?':
        fail(at, std::string("nothing to repeat before '") + c + "'");
      default:
        return one(parse_literal_char());
    }
  }

  char32_t parse_literal_char() { return decode_utf8_char(s_, pos_, error_text_fn()); }

  // After a backslash: a class escape (ranges, true) or one character (false).
  bool parse_escape(std::vector<CodeRange>& ranges, char32_t& ch) {
    const size_t at = pos_++;
    if (pos_ >= s_.size()) fail(at, "trailing backslash");
    const char e = s_[pos_++];
    switch (e) {
      case 'd':
        ranges = kDigit;
        return true;
      case 'D':
        ranges = complement(kDigit);
        return true;
      case 'w':
        ranges = kWord;
        return true;
      case 'W':
        ranges = complement(kWord);
        return true;
      case 's':
        ranges = kSpace;
        return true;
      case 'S':
        ranges = complement(kSpace);
        return true;
      case 'n':
        ch = '\n';
        return false;
      case 'r':
        ch = '\r';
        return false;
      case 't':
        ch = '\t';
        return false;
      case 'f':
        ch = '\f';
        return false;
      case 'v':
        ch = '\v';
        return false;
      case 'x': {
        if (pos_ < s_.size() && s_[pos_] == '{') {
          const size_t close = s_.find('}', pos_);
          if (close == std::string_view::npos) fail(at, "unterminated \\x{...}");
          ch = parse_hex(at, pos_ + 1, close);
          pos_ = close + 1;
        } else {
          ch = parse_hex(at, pos_, pos_ + 2);
          pos_ += 2;
        }
        return false;
      }
      case 'u':
        ch = parse_hex(at, pos_, pos_ + 4);
        pos_ += 4;
        return false;
      case 'b':
      case 'B':
        fail(at, "word boundaries (\\b, \\B) are not supported");
      case 'A':
      case 'z':
      case 'Z':
      case 'G':
        fail(at, "anchors other than ^ and $ are not supported");
      case 'k':
        fail(at, "backreferences are not supported");
      case 'p':
      case 'P':
        fail(at, "Unicode property classes (\\p, \\P) are not supported");
      default:
        if (e >= '0' && e <= '9') fail(at, "backreferences are not supported");
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')) fail(at, std::string("unknown escape '\\") + e + "'");
        --pos_;
        ch = parse_literal_char();  // an escaped punctuation character stands for itself
        return false;
    }
  }

  char32_t parse_hex(size_t at, size_t begin, size_t end) {
    if (end > s_.size() || end == begin) fail(at, "bad hex escape");
    char32_t v = 0;
    for (size_t i = begin; i < end; ++i) {
      const int d = hex_digit_value(s_[i]);
      if (d < 0 || v > kMaxCodePoint) fail(at, "bad hex escape");  // v > max: \x{...} too long to fit
      v = v * 16 + static_cast<char32_t>(d);
    }
    if (!is_escapable_code_point(v)) fail(at, "escape is not a valid code point");
    return v;
  }

  RegexNode parse_escape_atom() {
    std::vector<CodeRange> ranges;
    char32_t ch = 0;
    if (parse_escape(ranges, ch)) return chars(ranges);
    return one(ch);
  }

  // PCRE classes: a leading ']' is a literal, set escapes (\d, \w, \s and negations) may be
  // members but not range ends, and POSIX [:name:] classes are refused.
  std::vector<CodeRange> parse_class() {
    const ClassSyntax syntax{.leading_bracket_is_literal = true,
                             .newline_ends_class = false,
                             .reject_posix_classes = true,
                             .unterminated_message = "'[' is never closed"};
    ParsedClass parsed = parse_bracket_class(
        s_, pos_, syntax,
        [this](std::vector<CodeRange>& set, char32_t& ch) {
          if (s_[pos_] == '\\') return parse_escape(set, ch);
          ch = parse_literal_char();
          return false;
        },
        error_text_fn());
    return char_class(std::move(parsed.ranges), parsed.negated).ranges;
  }

  static constexpr int kMaxRepeat = 10000;
  std::string_view s_;
  size_t pos_ = 0;
  int n_alternatives_ = 0;  // top-level ones
  int n_start_anchors_ = 0;
  int n_end_anchors_ = 0;
};

}  // namespace

RegexAst parse_regex(std::string_view pattern) { return RegexParser(pattern).run(); }

Expr regex_node_to_expr(const RegexNode& n, bool json_string) {
  switch (n.kind) {
    case RegexNode::Kind::kChar:
      return json_string ? json_string_char(n.ranges) : char_class(n.ranges);
    case RegexNode::Kind::kSeq:
    case RegexNode::Kind::kAlt: {
      std::vector<Expr> items;
      items.reserve(n.items.size());
      for (const RegexNode& c : n.items) items.push_back(regex_node_to_expr(c, json_string));
      return n.kind == RegexNode::Kind::kSeq ? seq(std::move(items)) : choice(std::move(items));
    }
    case RegexNode::Kind::kRepeat:
      return repeat(regex_node_to_expr(n.items[0], json_string), n.min, n.max);
  }
  return empty();
}

RegexExpr regex_to_expr(std::string_view pattern, bool json_string) {
  const RegexAst ast = parse_regex(pattern);
  return {regex_node_to_expr(ast.root, json_string), ast.anchored_start, ast.anchored_end};
}

Grammar regex_to_grammar(std::string_view pattern) {
  Grammar g;
  g.add_rule("root", regex_to_expr(pattern).expr);
  return g;
}

}  // namespace seam::grammar
