// The tokenizer's vocabulary as the grammar engine sees it: each id's raw bytes
// (Tokenizer::token_bytes), which ids end generation (EOS and any extra stop
// ids), and a byte trie over the ordinary tokens so that a mask walk matches a
// shared prefix once. Special tokens are never in the trie: a constrained row
// may only emit them as a stop token where the grammar can end.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace seam {
class Tokenizer;
}

namespace seam::grammar {

struct TrieNode {
  uint32_t children_begin = 0;  // children are nodes [children_begin, children_end), sorted by byte
  uint32_t children_end = 0;
  uint32_t tokens_begin = 0;  // the tokens of this node's subtree are sorted_ids()[tokens_begin, tokens_end) ...
  uint32_t tokens_end = 0;
  uint32_t n_here = 0;  // ... and the first n_here of them end exactly here
  uint8_t byte = 0;     // the byte leading to this node from its parent
};

class TokenVocabulary {
 public:
  // bytes[id]: the token's bytes; special[id]: never allowed by a grammar (unless
  // a stop id); stop_ids: allowed exactly where the grammar may end.
  TokenVocabulary(std::vector<std::string> bytes, std::vector<bool> special, std::vector<int32_t> stop_ids);

  // From a tokenizer: its eos_id plus `extra_stop_ids` (e.g. <|eot_id|>) stop;
  // is_special ids and ids with no bytes are never allowed.
  static TokenVocabulary from_tokenizer(const Tokenizer& tok, const std::vector<int32_t>& extra_stop_ids = {});

  int vocab_size() const { return static_cast<int>(bytes_.size()); }
  int n_words() const { return (vocab_size() + 31) / 32; }  // uint32 words of a bitmask
  const std::string& bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }
  bool is_stop(int32_t id) const;
  bool in_trie(int32_t id) const { return in_trie_[static_cast<size_t>(id)]; }
  const std::vector<int32_t>& stop_ids() const { return stop_ids_; }
  const std::vector<TrieNode>& trie() const { return trie_; }  // trie()[0] is the root (empty prefix)
  const std::vector<int32_t>& sorted_ids() const { return sorted_ids_; }
  // A fingerprint of bytes, flags and stop ids: what a compiled grammar depends on.
  uint64_t fingerprint() const { return fingerprint_; }
  // The longest token's bytes (any id): the most characters one token can take (count_band.h).
  size_t max_token_bytes() const { return max_token_bytes_; }

 private:
  void build(uint32_t self, uint32_t lo, uint32_t hi, size_t depth);

  std::vector<std::string> bytes_;
  std::vector<bool> in_trie_;
  std::vector<int32_t> stop_ids_;
  std::vector<int32_t> sorted_ids_;  // trie tokens sorted by bytes (a DFS order of the trie)
  std::vector<TrieNode> trie_;
  uint64_t fingerprint_ = 0;
  size_t max_token_bytes_ = 0;
};

}  // namespace seam::grammar
