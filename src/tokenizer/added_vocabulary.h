// Added tokens (special and not) matched whole inside the text before the
// model sees it, with Hugging Face tokenizers' semantics: leftmost-longest
// matching, single_word, lstrip/rstrip swallowing the whitespace beside the
// token, and `normalized` tokens matched against the normalized text.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace seam {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  bool special = false;
  // How the token appears in normalized text (set by AddedVocabulary::build);
  // HF decodes a normalized=true token to this form.
  std::string normalized_content;
};

// One part of a text after splitting on added tokens: either an added token
// (id >= 0) or plain text to tokenize (id == -1). [begin, end) are byte
// offsets in the text that was split.
struct TextSpan {
  size_t begin = 0;
  size_t end = 0;
  int32_t id = -1;
};

// Leftmost-longest multi-pattern matcher over bytes (a trie; the first byte
// of every pattern is kept in a bitmap so that most positions cost one load).
class TokenMatcher {
 public:
  void add(std::string_view pattern, int index);
  bool empty() const { return nodes_.size() <= 1; }
  // The longest pattern matching at s[pos], as (index, length); index -1 when none.
  std::pair<int, size_t> longest_at(std::string_view s, size_t pos) const;
  bool may_start(unsigned char b) const { return first_bytes_[b]; }

 private:
  struct Node {
    std::unordered_map<unsigned char, int> next;
    int index = -1;
  };
  std::vector<Node> nodes_{Node{}};
  bool first_bytes_[256] = {};
};

class AddedVocabulary {
 public:
  // `normalize` maps a normalized=true token's content to how it appears in
  // normalized text (the tokenizer's normalizer); may be empty.
  template <typename NormalizeFn>
  void build(std::vector<AddedToken> tokens, NormalizeFn&& normalize) {
    tokens_ = std::move(tokens);
    for (size_t i = 0; i < tokens_.size(); ++i) {
      AddedToken& t = tokens_[i];
      by_content_[t.content] = t.id;
      by_id_[t.id] = static_cast<int>(i);
      t.normalized_content = t.normalized ? normalize(t.content) : t.content;
      if (t.normalized) {
        normalized_matcher_.add(t.normalized_content, static_cast<int>(i));
      } else {
        raw_matcher_.add(t.content, static_cast<int>(i));
      }
    }
  }

  // Splits raw text on the non-normalized tokens / normalized text on the normalized ones.
  void split_raw(std::string_view text, std::vector<TextSpan>& out) const { split(text, raw_matcher_, out); }
  void split_normalized(std::string_view text, std::vector<TextSpan>& out) const {
    split(text, normalized_matcher_, out);
  }

  const AddedToken* find_id(int32_t id) const;
  int32_t find_content(std::string_view content) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  void split(std::string_view text, const TokenMatcher& matcher, std::vector<TextSpan>& out) const;

  std::vector<AddedToken> tokens_;
  std::unordered_map<std::string, int32_t> by_content_;
  std::unordered_map<int32_t, int> by_id_;  // id -> index in tokens_
  TokenMatcher raw_matcher_;
  TokenMatcher normalized_matcher_;
};

}  // namespace seam
