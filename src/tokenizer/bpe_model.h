// The BPE model of tokenizer.json, with Hugging Face tokenizers' exact
// semantics: merges by rank through a priority queue (lowest rank, then
// leftmost), byte_fallback to <0xXX> tokens, unk with fuse_unk,
// continuing_subword_prefix / end_of_word_suffix, and ignore_merges (a
// pre-token that is itself in the vocabulary maps straight to its id).
// Results per pre-token are kept in a bounded, thread-safe cache.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace seam {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using Vocab = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

class BpeModel {
 public:
  // `model` is tokenizer.json's "model" object; `where` names it in errors.
  BpeModel(const nlohmann::json& model, const std::string& where);

  // Appends the ids of one pre-token.
  void tokenize(std::string_view piece, std::vector<int32_t>& out) const;

  int32_t token_to_id(std::string_view token) const;
  // nullptr when the id is not in the vocabulary.
  const std::string* id_to_token(int32_t id) const;
  // Number of entries in the vocabulary (as HF's get_vocab_size without added tokens).
  int vocab_size() const { return static_cast<int>(vocab_.size()); }
  // One past the largest id.
  int32_t id_limit() const { return static_cast<int32_t>(id_to_token_.size()); }
  // The most bytes of a pre-token one id can stand for: an id covers no more
  // bytes than its own string has (merges join strings), a byte-fallback id
  // one byte, an unfused unk one character. 0 when there is no bound: a fused
  // unk covers any run, and without unk or byte fallback an unknown character
  // is dropped -- unless `alphabet_known` (every character a pre-token can hold
  // is in the vocabulary, as with a ByteLevel stage).
  size_t max_bytes_per_id(bool alphabet_known) const;

 private:
  struct Merge {
    int32_t rank;
    int32_t new_id;
  };
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  void merge_word(std::string_view word, std::vector<int32_t>& out) const;

  Vocab vocab_;
  std::vector<std::string> id_to_token_;  // [id_limit]; empty string = no token
  std::vector<bool> has_id_;              // [id_limit]
  std::unordered_map<uint64_t, Merge> merges_;
  std::string unk_token_;  // empty: none
  int32_t unk_id_ = -1;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  std::string continuing_subword_prefix_;
  std::string end_of_word_suffix_;
  int32_t byte_ids_[256];  // id of "<0xXX>" per byte, -1 when missing

  // The cache: pre-token -> ids, direct-mapped (a new entry replaces the one
  // in its slot), so memory is bounded by construction. Only short
  // pre-tokens with few ids are kept -- nearly every word of real text.
  static constexpr size_t kCacheSlots = size_t{1} << 16;
  static constexpr size_t kSlotsPerLock = 256;
  static constexpr size_t kMaxKeyBytes = 30;
  static constexpr size_t kMaxIds = 8;
  struct CacheEntry {
    uint64_t hash = 0;
    uint8_t key_len = 0;
    uint8_t n_ids = 0;  // 0: empty slot
    char key[kMaxKeyBytes];
    int32_t ids[kMaxIds];
  };
  struct Cache {
    std::unique_ptr<CacheEntry[]> entries{new CacheEntry[kCacheSlots]};
    std::unique_ptr<std::mutex[]> locks{new std::mutex[kCacheSlots / kSlotsPerLock]};
  };
  mutable Cache cache_;
};

}  // namespace seam
