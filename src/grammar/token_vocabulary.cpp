#include "grammar/token_vocabulary.h"

#include <algorithm>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace seam::grammar {

namespace {
uint64_t fnv1a(uint64_t h, std::string_view s) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}
}  // namespace

TokenVocabulary::TokenVocabulary(std::vector<std::string> bytes, std::vector<bool> special,
                                 std::vector<int32_t> stop_ids)
    : bytes_(std::move(bytes)), stop_ids_(std::move(stop_ids)) {
  SEAM_CHECK(special.size() == bytes_.size(), "grammar: vocabulary has ", bytes_.size(), " tokens but ", special.size(),
             " special flags");
  std::sort(stop_ids_.begin(), stop_ids_.end());
  stop_ids_.erase(std::unique(stop_ids_.begin(), stop_ids_.end()), stop_ids_.end());
  for (int32_t id : stop_ids_)
    SEAM_CHECK(id >= 0 && id < vocab_size(), "grammar: stop token id ", id, " is outside the vocabulary");
  in_trie_.assign(bytes_.size(), false);
  uint64_t h = 1469598103934665603ull;
  for (size_t id = 0; id < bytes_.size(); ++id) {
    in_trie_[id] = !special[id] && !bytes_[id].empty() && !is_stop(static_cast<int32_t>(id));
    if (in_trie_[id]) sorted_ids_.push_back(static_cast<int32_t>(id));
    h = fnv1a(h, bytes_[id]);
    max_token_bytes_ = std::max(max_token_bytes_, bytes_[id].size());
    h = fnv1a(h, in_trie_[id] ? "\x01" : "\x02");
  }
  for (int32_t id : stop_ids_) h = fnv1a(h, std::to_string(id));
  fingerprint_ = h;
  std::stable_sort(sorted_ids_.begin(), sorted_ids_.end(), [&](int32_t a, int32_t b) {
    return bytes_[static_cast<size_t>(a)] < bytes_[static_cast<size_t>(b)];
  });
  trie_.emplace_back();
  build(0, 0, static_cast<uint32_t>(sorted_ids_.size()), 0);
}

bool TokenVocabulary::is_stop(int32_t id) const { return std::binary_search(stop_ids_.begin(), stop_ids_.end(), id); }

// Fills node `self` for sorted_ids_[lo, hi), which share their first `depth`
// bytes, and (depth first) its subtree.
void TokenVocabulary::build(uint32_t self, uint32_t lo, uint32_t hi, size_t depth) {
  auto len = [&](uint32_t i) { return bytes_[static_cast<size_t>(sorted_ids_[i])].size(); };
  auto at = [&](uint32_t i) { return static_cast<uint8_t>(bytes_[static_cast<size_t>(sorted_ids_[i])][depth]); };
  uint32_t here = lo;
  while (here < hi && len(here) == depth) ++here;
  std::vector<std::pair<uint32_t, uint32_t>> groups;  // the rest, by their byte at `depth`
  for (uint32_t i = here; i < hi;) {
    uint32_t j = i;
    while (j < hi && at(j) == at(i)) ++j;
    groups.push_back({i, j});
    i = j;
  }
  const uint32_t first = static_cast<uint32_t>(trie_.size());
  const uint8_t byte = trie_[self].byte;
  trie_[self] = TrieNode{first, first + static_cast<uint32_t>(groups.size()), lo, hi, here - lo, byte};
  trie_.resize(trie_.size() + groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    trie_[first + g].byte = at(groups[g].first);
    build(first + static_cast<uint32_t>(g), groups[g].first, groups[g].second, depth + 1);
  }
}

TokenVocabulary TokenVocabulary::from_tokenizer(const Tokenizer& tok, const std::vector<int32_t>& extra_stop_ids) {
  const int n = tok.vocab_size();
  std::vector<std::string> bytes(static_cast<size_t>(n));
  std::vector<bool> special(static_cast<size_t>(n));
  for (int id = 0; id < n; ++id) {
    special[static_cast<size_t>(id)] = tok.is_special(id);
    bytes[static_cast<size_t>(id)] = tok.token_bytes(id);
  }
  std::vector<int32_t> stops = extra_stop_ids;
  if (tok.eos_id() >= 0) stops.push_back(tok.eos_id());
  return TokenVocabulary(std::move(bytes), std::move(special), std::move(stops));
}

}  // namespace seam::grammar
