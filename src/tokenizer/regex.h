// A compiled regular expression for the tokenizer.json Split pre-tokenizer and
// Replace normalizer/decoder. Hugging Face tokenizers compiles these patterns
// with Oniguruma; PCRE2 (UTF + UCP, JIT) has the same backtracking semantics
// for the constructs the real patterns use (alternation order, lookahead,
// \p{L}/\p{N}, (?i:...)). The one class that differs, \s (PCRE2 also matches
// U+180E), is rewritten to Oniguruma's White_Space set before compiling.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace seam {

class Regex {
 public:
  // `what` names the pattern's origin in error messages (e.g. "tokenizer.json pre_tokenizer").
  Regex(const std::string& pattern, const std::string& what);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends the [start, end) byte ranges of all non-overlapping, non-empty
  // matches in s (valid UTF-8), left to right. Thread-safe.
  void find_all(std::string_view s, std::vector<std::pair<size_t, size_t>>& out) const;
  // The same matches, handed to `on_match(start, end)` one by one as they are found.
  void for_each_match(std::string_view s, const std::function<void(size_t, size_t)>& on_match) const;

  // The pattern as PCRE2 sees it (after the \s rewrite).
  const std::string& pcre2_pattern() const { return translated_; }

  // A PCRE2 pattern that matches `literal` exactly.
  static std::string escape(std::string_view literal);

 private:
  void* code_ = nullptr;  // pcre2_code_8*
  bool jit_ = false;
  std::string translated_;
  std::string what_;
};

// Oniguruma's Unicode \s: the White_Space property.
bool is_white_space(char32_t cp);

}  // namespace seam
