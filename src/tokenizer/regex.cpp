#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.h"

#include <pcre2.h>


#include "core/error.h"
#include "tokenizer/utf8.h"

namespace seam {

namespace {

// Oniguruma's \s (Unicode White_Space), as the body of a character class.
constexpr std::string_view kWhiteSpaceClassBody =
    "\\t-\\r \\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}";

std::string translate(const std::string& pattern) {
  std::string out;
  out.reserve(pattern.size() + 64);
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[i + 1];
      ++i;
      if (e == 's') {
        if (in_class) {
          out += kWhiteSpaceClassBody;
        } else {
          out += '[';
          out += kWhiteSpaceClassBody;
          out += ']';
        }
      } else if (e == 'S' && !in_class) {
        out += "[^";
        out += kWhiteSpaceClassBody;
        out += ']';
      } else {
        out += '\\';
        out += e;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

// Per-thread match state. The match data is shared by every Regex of the
// thread: a match's offsets are copied out before the callback runs, so a
// callback may run another regex.
struct ThreadMatchState {
  pcre2_jit_stack* jit_stack = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_match_data* data = nullptr;
  ThreadMatchState() {
    data = pcre2_match_data_create(16, nullptr);
    // The default 32 KiB JIT stack is too small for long runs under
    // backtracking patterns such as \s+(?!\S); grow up to 64 MiB.
    jit_stack = pcre2_jit_stack_create(32 * 1024, 64 * 1024 * 1024, nullptr);
    context = pcre2_match_context_create(nullptr);
    if (jit_stack && context) pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~ThreadMatchState() {
    if (data) pcre2_match_data_free(data);
    if (context) pcre2_match_context_free(context);
    if (jit_stack) pcre2_jit_stack_free(jit_stack);
  }
};

ThreadMatchState& thread_state() {
  thread_local ThreadMatchState state;
  return state;
}

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

}  // namespace

bool is_white_space(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

Regex::Regex(const std::string& pattern, const std::string& what)
    : translated_(translate(pattern)), what_(what) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated_.data()),
                                   translated_.size(), PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK,
                                   &error_code, &error_offset, nullptr);
  SEAM_CHECK(code != nullptr, what, ": cannot compile regex '", pattern, "': ",
             pcre2_message(error_code), " at offset ", error_offset);
  code_ = code;
  jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

std::string Regex::escape(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    if (std::string_view("\\^$.|?*+()[]{}-/").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

void Regex::find_all(std::string_view s, std::vector<std::pair<size_t, size_t>>& out) const {
  for_each_match(s, [&out](size_t start, size_t end) { out.emplace_back(start, end); });
}

void Regex::for_each_match(std::string_view s, const std::function<void(size_t, size_t)>& on_match) const {
  auto* code = static_cast<pcre2_code*>(code_);
  ThreadMatchState& state = thread_state();
  SEAM_CHECK(state.data != nullptr && state.context != nullptr, what_, ": out of memory for regex matching");
  pcre2_match_data* data = state.data;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.data());
  size_t pos = 0;
  while (pos <= s.size()) {
    int rc = jit_ ? pcre2_jit_match(code, subject, s.size(), pos, 0, data, state.context)
                  : pcre2_match(code, subject, s.size(), pos, PCRE2_NO_UTF_CHECK, data,
                                state.context);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      // Fall back to the interpreter, which keeps its backtracking on the heap.
      rc = pcre2_match(code, subject, s.size(), pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, data,
                       nullptr);
    }
    if (rc == PCRE2_ERROR_NOMATCH) break;
    SEAM_CHECK(rc >= 0, what_, ": regex match failed: ", pcre2_message(rc));
    // rc == 0: more groups than the ovector holds; the whole-match offsets are still set.
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data);
    const size_t start = ovector[0], end = ovector[1];
    if (end > start) {
      on_match(start, end);
      pos = end;
    } else {
      // An empty match: step over one character (HF drops empty splits).
      if (start >= s.size()) break;
      pos = start + utf8::sequence_length(static_cast<unsigned char>(s[start]));
    }
  }
}

}  // namespace seam
