#include "jinja/lexer.h"

#include <cctype>

#include "jinja/error.h"
#include "jinja/unicode.h"

namespace seam::jinja {

namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Whitespace control on text (`-`, lstrip_blocks) strips what jinja2's `\s` matches: Python's
// str.isspace() code points (NBSP, U+3000, \x1c-\x1f, ...), not ASCII whitespace alone.
// The byte length of such a code point starting at s[p] (0: none there).
size_t space_at(const std::string& s, size_t p) {
  if (p >= s.size()) return 0;
  size_t i = p;
  const char32_t cp = utf8_next(s, i);
  return is_space(cp) && (cp < 0x80 || i - p > 1) ? i - p : 0;  // a stray byte >= 0x80 is no space
}

// The byte length of such a code point ending just before s[end] (0: none there).
size_t space_before(const std::string& s, size_t end) {
  if (end == 0) return 0;
  size_t start = end - 1;
  while (start > 0 && end - start < 4 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
  size_t i = start;
  const char32_t cp = utf8_next(s, i);
  return i == end && is_space(cp) && (cp < 0x80 || end - start > 1) ? end - start : 0;
}

size_t rstrip_spaces(const std::string& s, size_t end) {
  while (size_t n = space_before(s, end)) end -= n;
  return end;
}

std::string normalize_newlines(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r') {
      out += '\n';
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

class Lexer {
 public:
  Lexer(std::string src, const LexOptions& opt) : src_(std::move(src)), opt_(opt) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      const size_t tag = find_tag(pos_);
      std::string text = src_.substr(pos_, tag - pos_);
      if (tag == src_.size()) {
        emit_text(std::move(text));
        pos_ = tag;
        break;
      }
      const char kind = src_[tag + 1];  // '{', '%' or '#'
      const char sign = tag + 2 < src_.size() ? src_[tag + 2] : 0;
      if (sign == '-') {
        text.resize(rstrip_spaces(text, text.size()));
      } else if (sign != '+' && kind != '{') {
        lstrip(text);
      }
      emit_text(std::move(text));
      count_lines(pos_, tag);
      pos_ = tag + 2 + (sign == '-' || sign == '+' ? 1 : 0);
      if (kind == '#') lex_comment();
      else if (kind == '%' && is_raw_begin()) lex_raw();
      else lex_tag(kind);
    }
    tokens_.push_back(Token{TokenType::eof, "", 0, 0, line_});
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i)
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    return src_.size();
  }

  // lstrip_blocks: drops the whitespace between the start of a line and a block
  // or comment tag (a tag at the start of the text counts when the text starts a line).
  void lstrip(std::string& text) const {
    if (!opt_.lstrip_blocks) return;
    const size_t nl = text.rfind('\n');
    const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
    if (l_pos == 0 && !line_starting_) return;
    if (rstrip_spaces(text, text.size()) > l_pos) return;  // something other than whitespace before the tag
    text.resize(l_pos);
  }

  void count_lines(size_t from, size_t to) {
    for (size_t i = from; i < to && i < src_.size(); ++i)
      if (src_[i] == '\n') ++line_;
  }

  void emit_text(std::string text) {
    if (!text.empty()) tokens_.push_back(Token{TokenType::text, std::move(text), 0, 0, line_});
  }

  // After a tag's closing delimiter at `after`: `strip` consumes all following
  // whitespace; `trim` (trim_blocks on a block or comment, not turned off by +)
  // consumes one newline. line_starting_ records whether the consumed text ended
  // a line (lstrip_blocks then applies to a tag at the very start of the next text).
  void finish_tag(size_t after, bool strip, bool trim) {
    size_t p = after;
    if (strip) {
      while (size_t n = space_at(src_, p)) p += n;
    } else if (trim && p < src_.size() && src_[p] == '\n') {
      ++p;
    }
    count_lines(pos_, p);
    line_starting_ = p > 0 && src_[p - 1] == '\n';
    pos_ = p;
  }

  void lex_comment() {
    const size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) fail(ErrorKind::syntax, "line " + std::to_string(line_) + ": missing end of comment tag");
    const bool strip = end > pos_ && src_[end - 1] == '-';
    const bool plus = end > pos_ && src_[end - 1] == '+';
    finish_tag(end + 2, strip, opt_.trim_blocks && !plus);
  }

  // `{% raw %}`: the tag name directly after the opening delimiter.
  bool is_raw_begin() const {
    size_t p = pos_;
    while (p < src_.size() && is_ws(src_[p])) ++p;
    if (src_.compare(p, 3, "raw") != 0) return false;
    p += 3;
    while (p < src_.size() && is_ws(src_[p])) ++p;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
    return src_.compare(p, 2, "%}") == 0;
  }

  void lex_raw() {
    size_t p = src_.find("%}", pos_);
    const bool strip_after = src_[p - 1] == '-';
    // jinja2's raw_begin rule strips after `-%}` only: trim_blocks does not apply to the newline
    // after `{% raw %}` (it does after `{% endraw %}`, below).
    finish_tag(p + 2, strip_after, false);
    // Find {%[-+]? endraw [-+]?%}.
    size_t search = pos_;
    while (true) {
      const size_t open = src_.find("{%", search);
      if (open == std::string::npos) fail(ErrorKind::syntax, "line " + std::to_string(line_) + ": missing endraw");
      size_t q = open + 2;
      const char sign = q < src_.size() ? src_[q] : 0;
      if (sign == '-' || sign == '+') ++q;
      while (q < src_.size() && is_ws(src_[q])) ++q;
      if (src_.compare(q, 6, "endraw") != 0) {
        search = open + 2;
        continue;
      }
      q += 6;
      while (q < src_.size() && is_ws(src_[q])) ++q;
      const char end_sign = q < src_.size() ? src_[q] : 0;
      if (end_sign == '-' || end_sign == '+') ++q;
      if (src_.compare(q, 2, "%}") != 0) fail(ErrorKind::syntax, "line " + std::to_string(line_) + ": bad endraw tag");
      std::string body = src_.substr(pos_, open - pos_);
      if (sign == '-') {
        body.resize(rstrip_spaces(body, body.size()));
      } else if (sign != '+') {
        lstrip(body);
      }
      emit_text(std::move(body));
      count_lines(pos_, open);
      pos_ = open;
      finish_tag(q + 2, end_sign == '-', opt_.trim_blocks && end_sign != '+');
      return;
    }
  }

  void lex_tag(char kind) {
    const bool is_block = kind == '%';
    tokens_.push_back(Token{is_block ? TokenType::block_begin : TokenType::var_begin, "", 0, 0, line_});
    const char close = is_block ? '%' : '}';
    int depth = 0;  // open ( [ {: a "}}" inside a dict literal does not end the tag
    while (true) {
      while (pos_ < src_.size() && is_ws(src_[pos_])) {
        if (src_[pos_] == '\n') ++line_;
        ++pos_;
      }
      if (pos_ >= src_.size())
        fail(ErrorKind::syntax, "line " + std::to_string(line_) + ": unexpected end of template (unclosed tag)");
      const char c = src_[pos_];
      if (depth == 0) {
        const char sign = (c == '-' || c == '+') ? c : 0;
        const size_t d = pos_ + (sign ? 1 : 0);
        if (d + 1 < src_.size() && src_[d] == close && src_[d + 1] == '}') {
          tokens_.push_back(Token{is_block ? TokenType::block_end : TokenType::var_end, "", 0, 0, line_});
          finish_tag(d + 2, sign == '-', is_block && opt_.trim_blocks && sign != '+');
          return;
        }
      }
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t e = pos_;
        while (e < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) ++e;
        tokens_.push_back(Token{TokenType::name, src_.substr(pos_, e - pos_), 0, 0, line_});
        pos_ = e;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        lex_number();
      } else if (c == '\'' || c == '"') {
        lex_string(c);
      } else {
        static const char* const ops[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "*", "/", "%", "~", "<",
                                           ">", "=", ".", ",", ":", "|", "(", ")", "[", "]", "{", "}"};
        bool matched = false;
        for (const char* op : ops) {
          const size_t n = std::char_traits<char>::length(op);
          if (src_.compare(pos_, n, op) == 0) {
            tokens_.push_back(Token{TokenType::op, op, 0, 0, line_});
            pos_ += n;
            if (c == '(' || c == '[' || c == '{') ++depth;
            if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
            matched = true;
            break;
          }
        }
        if (!matched)
          fail(ErrorKind::syntax, "line " + std::to_string(line_) + ": unexpected character '" + std::string(1, c) + "'");
      }
    }
  }

  void lex_number() {
    size_t e = pos_;
    std::string digits;
    auto take_digits = [&] {
      while (e < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) {
        if (src_[e] != '_') digits += src_[e];
        ++e;
      }
    };
    take_digits();
    bool is_float = false;
    if (e + 1 < src_.size() && src_[e] == '.' && std::isdigit(static_cast<unsigned char>(src_[e + 1]))) {
      is_float = true;
      digits += '.';
      ++e;
      take_digits();
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t f = e + 1;
      if (f < src_.size() && (src_[f] == '+' || src_[f] == '-')) ++f;
      if (f < src_.size() && std::isdigit(static_cast<unsigned char>(src_[f]))) {
        is_float = true;
        digits += 'e';
        digits.append(src_, e + 1, f - e - 1);
        e = f;
        take_digits();
      }
    }
    Token t{is_float ? TokenType::floating : TokenType::integer, digits, 0, 0, line_};
    if (is_float) t.float_value = std::stod(digits);
    else {
      try {
        t.int_value = std::stoll(digits);
      } catch (const std::exception&) {
        fail(ErrorKind::syntax, "line " + std::to_string(line_) + ": integer literal too large: " + digits);
      }
    }
    tokens_.push_back(std::move(t));
    pos_ = e;
  }

  // A string literal with Python's escapes (\n \t \\ \' \" \xHH \uHHHH \UHHHHHHHH, octal);
  // an unknown escape keeps its backslash, as Python's unicode-escape does.
  void lex_string(char quote) {
    std::string out;
    size_t p = pos_ + 1;
    const int start_line = line_;
    while (true) {
      if (p >= src_.size()) fail(ErrorKind::syntax, "line " + std::to_string(start_line) + ": unterminated string");
      const char c = src_[p];
      if (c == quote) break;
      if (c == '\n') ++line_;
      if (c != '\\' || p + 1 >= src_.size()) {
        out += c;
        ++p;
        continue;
      }
      const char e = src_[p + 1];
      p += 2;
      auto hex = [&](int n) {
        if (p + n > src_.size()) fail(ErrorKind::syntax, "line " + std::to_string(line_) + ": truncated \\x escape");
        const char32_t cp = static_cast<char32_t>(std::stoul(src_.substr(p, n), nullptr, 16));
        p += n;
        utf8_append(out, cp);
      };
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'v': out += '\v'; break;
        case '\n': ++line_; break;  // a backslash-newline joins lines
        case 'x': hex(2); break;
        case 'u': hex(4); break;
        case 'U': hex(8); break;
        default:
          if (e >= '0' && e <= '7') {
            int v = e - '0';
            for (int k = 0; k < 2 && p < src_.size() && src_[p] >= '0' && src_[p] <= '7'; ++k) v = v * 8 + (src_[p++] - '0');
            utf8_append(out, static_cast<char32_t>(v));
          } else {
            out += '\\';
            out += e;
          }
      }
    }
    tokens_.push_back(Token{TokenType::string, std::move(out), 0, 0, start_line});
    pos_ = p + 1;
  }

  std::string src_;
  LexOptions opt_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(const std::string& source, const LexOptions& options) {
  std::string src = normalize_newlines(source);
  if (!options.keep_trailing_newline && !src.empty() && src.back() == '\n') src.pop_back();
  return Lexer(std::move(src), options).run();
}

}  // namespace seam::jinja
