#include "tokenizer/added_vocabulary.h"

#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

namespace seam {

namespace {

// Rust regex's \w (Unicode word characters) for single_word boundaries:
// letters, marks, decimal digits, connector punctuation, joiners.
bool is_word_char(char32_t cp) {
  static const Regex word("^[\\p{L}\\p{Nl}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}]", "single_word");
  std::string s;
  utf8::append(s, cp);
  std::vector<std::pair<size_t, size_t>> m;
  word.find_all(s, m);
  return !m.empty();
}

// The code point that ends at byte `end` of s (s[..end] is valid UTF-8).
char32_t last_char_before(std::string_view s, size_t end) {
  size_t start = end - 1;
  while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
  size_t n;
  return utf8::decode_at(s, start, &n);
}

}  // namespace

void TokenMatcher::add(std::string_view pattern, int index) {
  if (pattern.empty()) return;
  int node = 0;
  for (char c : pattern) {
    const auto b = static_cast<unsigned char>(c);
    auto it = nodes_[node].next.find(b);
    if (it == nodes_[node].next.end()) {
      nodes_.push_back(Node{});
      const int child = static_cast<int>(nodes_.size() - 1);
      nodes_[node].next[b] = child;
      node = child;
    } else {
      node = it->second;
    }
  }
  nodes_[node].index = index;
  first_bytes_[static_cast<unsigned char>(pattern[0])] = true;
}

std::pair<int, size_t> TokenMatcher::longest_at(std::string_view s, size_t pos) const {
  int node = 0;
  std::pair<int, size_t> best{-1, 0};
  for (size_t i = pos; i < s.size(); ++i) {
    auto it = nodes_[node].next.find(static_cast<unsigned char>(s[i]));
    if (it == nodes_[node].next.end()) break;
    node = it->second;
    if (nodes_[node].index >= 0) best = {nodes_[node].index, i + 1 - pos};
  }
  return best;
}

const AddedToken* AddedVocabulary::find_id(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

int32_t AddedVocabulary::find_content(std::string_view content) const {
  auto it = by_content_.find(std::string(content));
  return it == by_content_.end() ? -1 : it->second;
}

void AddedVocabulary::split(std::string_view text, const TokenMatcher& matcher,
                            std::vector<TextSpan>& out) const {
  size_t start_offset = 0;  // end of the previous match: text before it is emitted
  if (!matcher.empty()) {
    size_t pos = 0;
    while (pos < text.size()) {
      if (!matcher.may_start(static_cast<unsigned char>(text[pos]))) {
        ++pos;
        continue;
      }
      const auto [index, length] = matcher.longest_at(text, pos);
      if (index < 0) {
        ++pos;
        continue;
      }
      const AddedToken& token = tokens_[index];
      size_t start = pos, stop = pos + length;
      pos = stop;  // a discarded match still consumes its span, as the HF matcher does
      if (token.single_word) {
        size_t n;
        const bool start_ok = start == 0 || !is_word_char(last_char_before(text, start));
        const bool stop_ok = stop == text.size() || !is_word_char(utf8::decode_at(text, stop, &n));
        if (!start_ok || !stop_ok) continue;
      }
      if (token.lstrip) {
        size_t new_start = start;
        while (new_start > 0) {
          const char32_t cp = last_char_before(text, new_start);
          if (!is_white_space(cp)) break;
          std::string tmp;
          utf8::append(tmp, cp);
          new_start -= tmp.size();
        }
        start = std::max(new_start, start_offset);
      }
      if (token.rstrip) {
        while (stop < text.size()) {
          size_t n;
          const char32_t cp = utf8::decode_at(text, stop, &n);
          if (!is_white_space(cp)) break;
          stop += n;
        }
        pos = stop;
      }
      if (start_offset < start) out.push_back({start_offset, start, -1});
      out.push_back({start, stop, token.id});
      start_offset = stop;
    }
  }
  if (start_offset < text.size() || text.empty()) out.push_back({start_offset, text.size(), -1});
}

}  // namespace seam
