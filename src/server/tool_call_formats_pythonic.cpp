// The pythonic tool-call format (sglang's `pythonic`: Llama 3.2 / Llama 4): the output is a Python
// list of calls with keyword arguments of literal values,
//   [get_weather(city="Paris", days=3), get_time(tz='CET')]
// at the start of the output, or after <|python_start|> anywhere (then <|python_end|> after the list
// is dropped too). Values: strings ('...', "...", with Python's escapes), numbers, True / False /
// None, lists, tuples (as arrays) and dicts (keys as JSON's text of them). A positional argument,
// a dotted name or anything else that is not such a list leaves the text content.
#include <cctype>
#include <cstdint>
#include <optional>

#include "server/tool_call_formats.h"
#include "tokenizer/utf8.h"

namespace seam::tool_call_formats {

namespace {

using ojson = nlohmann::ordered_json;
constexpr size_t npos = std::string::npos;

// Recursive descent over the text; `incomplete` when the text ended before the list did.
class PythonCallList {
 public:
  explicit PythonCallList(std::string_view s) : s_(s) {}

  struct Call {
    std::string name;
    ojson arguments;
  };
  // The calls and the bytes up to the closing ']'; nullopt when not a call list (or incomplete).
  std::optional<std::vector<Call>> parse(size_t& end) {
    std::vector<Call> calls;
    ws();
    if (!eat('[')) return std::nullopt;
    for (;;) {
      ws();
      Call c;
      if (!call(c)) return std::nullopt;
      calls.push_back(std::move(c));
      ws();
      if (eat(']')) break;
      if (!eat(',')) return std::nullopt;
    }
    end = i_;
    return calls;
  }
  bool incomplete() const { return incomplete_; }

 private:
  bool at_end() {
    if (i_ >= s_.size()) incomplete_ = true;
    return i_ >= s_.size();
  }
  void ws() {
    while (i_ < s_.size() && is_space(s_[i_])) ++i_;
  }
  bool eat(char c) {
    if (at_end() || s_[i_] != c) return false;
    ++i_;
    return true;
  }
  static bool ident_char(char c, bool first) {
    return c == '_' || std::isalpha(static_cast<unsigned char>(c)) || (!first && std::isdigit(static_cast<unsigned char>(c)));
  }
  bool identifier(std::string& out) {
    if (at_end() || !ident_char(s_[i_], true)) return false;
    const size_t b = i_;
    while (i_ < s_.size() && ident_char(s_[i_], false)) ++i_;
    if (i_ == s_.size()) incomplete_ = true;  // the name may go on
    out = std::string(s_.substr(b, i_ - b));
    return i_ < s_.size();
  }
  bool call(Call& c) {
    if (!identifier(c.name)) return false;
    if (!eat('(')) return false;
    c.arguments = ojson::object();
    for (;;) {
      ws();
      if (eat(')')) return true;
      std::string key;
      if (!identifier(key)) return false;
      ws();
      if (!eat('=')) return false;  // positional arguments are not taken
      ws();
      ojson v;
      if (!value(v)) return false;
      c.arguments[key] = std::move(v);
      ws();
      if (eat(')')) return true;
      if (!eat(',')) return false;
    }
  }
  bool sequence(char close, ojson& out) {  // after the opening bracket
    out = ojson::array();
    for (;;) {
      ws();
      if (eat(close)) return true;
      ojson v;
      if (!value(v)) return false;
      out.push_back(std::move(v));
      ws();
      if (eat(close)) return true;
      if (!eat(',')) return false;
    }
  }
  bool dict(ojson& out) {  // after '{'
    out = ojson::object();
    for (;;) {
      ws();
      if (eat('}')) return true;
      ojson k, v;
      if (!value(k)) return false;
      ws();
      if (!eat(':')) return false;
      ws();
      if (!value(v)) return false;
      // json.dumps writes a non-string key as its JSON text (1 -> "1", True -> "true"); a list or
      // dict is no key in Python (unhashable).
      if (k.is_array() || k.is_object()) return false;
      out[k.is_string() ? k.get<std::string>() : k.dump()] = std::move(v);
      ws();
      if (eat('}')) return true;
      if (!eat(',')) return false;
    }
  }
  // Nesting deeper than this is not a call (the parser recurses, on model output).
  static constexpr int kMaxDepth = 64;

  bool value(ojson& out) {
    if (at_end() || depth_ >= kMaxDepth) return false;
    struct Nest {
      int& d;
      explicit Nest(int& depth) : d(depth) { ++d; }
      ~Nest() { --d; }
    } nest(depth_);
    const char c = s_[i_];
    if (c == '\'' || c == '"') return string(out);
    if (c == '[') return ++i_, sequence(']', out);
    if (c == '(') return ++i_, sequence(')', out);
    if (c == '{') return ++i_, dict(out);
    if (c == '-' || c == '+' || c == '.' || std::isdigit(static_cast<unsigned char>(c))) return number(out);
    std::string word;
    if (!identifier(word)) return false;
    if (word == "True") out = true;
    else if (word == "False") out = false;
    else if (word == "None") out = nullptr;
    else return false;
    return true;
  }
  bool number(ojson& out) {
    const size_t b = i_;
    if (s_[i_] == '-' || s_[i_] == '+') ++i_;
    bool digits = false, real = false;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        digits = true;
      } else if (c == '.' || c == 'e' || c == 'E') {
        real = true;
      } else if ((c == '-' || c == '+') && (s_[i_ - 1] == 'e' || s_[i_ - 1] == 'E')) {
      } else {
        break;
      }
      ++i_;
    }
    if (i_ == s_.size()) incomplete_ = true;
    if (!digits || i_ == s_.size()) return false;
    // Python's spellings JSON lacks: a leading '+', ".5", "5." (appended piece by piece, not
    // inserted: GCC 12 warns of a false overlap in std::string::insert here).
    const std::string_view raw = s_.substr(b, i_ - b);
    std::string text;
    size_t k = 0;
    if (raw[k] == '+' || raw[k] == '-') {
      if (raw[k] == '-') text += '-';
      ++k;
    }
    if (k < raw.size() && raw[k] == '.') text += '0';
    text.append(raw.substr(k));
    if (text.back() == '.') text += '0';
    const ojson j = ojson::parse(text, nullptr, false);
    if (!j.is_number() || (real && j.is_number_integer())) return false;
    out = j;
    return true;
  }
  bool hex(size_t n, uint32_t& cp) {
    cp = 0;
    for (size_t k = 0; k < n; ++k, ++i_) {
      if (at_end() || !std::isxdigit(static_cast<unsigned char>(s_[i_]))) return false;
      const char h = char(std::tolower(static_cast<unsigned char>(s_[i_])));
      cp = cp * 16 + uint32_t(h <= '9' ? h - '0' : h - 'a' + 10);
    }
    return cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF);
  }
  bool string(ojson& out) {
    const char q = s_[i_++];
    std::string text;
    for (;;) {
      if (at_end()) return false;
      const char c = s_[i_++];
      if (c == q) break;
      if (c == '\n') return false;  // not a one-line string literal
      if (c != '\\') {
        text += c;
        continue;
      }
      if (at_end()) return false;
      const char e = s_[i_++];
      uint32_t cp = 0;
      switch (e) {
        case 'n': text += '\n'; break;
        case 't': text += '\t'; break;
        case 'r': text += '\r'; break;
        case 'a': text += '\a'; break;
        case 'b': text += '\b'; break;
        case 'f': text += '\f'; break;
        case 'v': text += '\v'; break;
        case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': {
          // Octal: up to three digits.
          uint32_t o = uint32_t(e - '0');
          for (int k = 0; k < 2 && i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '7'; ++k) o = o * 8 + uint32_t(s_[i_++] - '0');
          utf8::append(text, o);
          break;
        }
        case '\\': case '\'': case '"': text += e; break;
        case 'x': if (!hex(2, cp)) return false; utf8::append(text, cp); break;
        case 'u': if (!hex(4, cp)) return false; utf8::append(text, cp); break;
        case 'U': if (!hex(8, cp)) return false; utf8::append(text, cp); break;
        case '\n': break;  // a line continuation
        default: text += '\\', text += e;  // Python keeps an unknown escape as written
      }
    }
    out = text;
    return true;
  }

  std::string_view s_;
  size_t i_ = 0;
  int depth_ = 0;
  bool incomplete_ = false;
};

class PythonicParser : public ToolCallParser {
  static constexpr std::string_view k_start = "<|python_start|>", k_end = "<|python_end|>";

  size_t find_start(std::string_view buf, bool at_output_start, size_t& marker_len, size_t& held) const override {
    return find_opener_or_marker(buf, at_output_start, '[', k_start, marker_len, held);
  }

  size_t parse_region(std::string_view buf, bool final, std::vector<Call>& calls, bool& done,
                      bool& failed) const override {
    PythonCallList list(buf);
    size_t end = 0;
    const auto parsed = list.parse(end);
    if (!parsed) {
      if (!list.incomplete()) failed = true;  // incomplete: wait (at the end, the base gives up)
      return 0;
    }
    // <|python_end|> after the list is part of the call; wait while it may still be coming.
    const size_t j = skip_space(buf, end);
    const std::string_view rest = buf.substr(j);
    if (rest.substr(0, k_end.size()) == k_end) {
      end = j + k_end.size();
    } else if (!final && rest.size() < k_end.size() && k_end.substr(0, rest.size()) == rest) {
      return 0;
    }
    for (const auto& c : *parsed)
      calls.push_back(Call{c.name, dump_json(c.arguments)});
    done = true;
    return end;
  }
};

}  // namespace

std::unique_ptr<ToolCallParser> make_pythonic_parser() { return std::make_unique<PythonicParser>(); }

}  // namespace seam::tool_call_formats
