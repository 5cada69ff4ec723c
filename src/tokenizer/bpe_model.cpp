#include "tokenizer/bpe_model.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "tokenizer/json_fields.h"
#include "tokenizer/utf8.h"

namespace seam {

namespace {

using json_fields::json;

// A fast 64-bit hash of short strings (8 bytes per step, then a final mix).
uint64_t hash_bytes(std::string_view s) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ s.size();
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, s.data() + i, s.size() - i);
  h = (h ^ tail) * 0x94D049BB133111EBull;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 32);
}

struct Symbol {
  int32_t id;
  int32_t prev;  // index of the previous live symbol, -1 at the start
  int32_t next;  // index of the next live symbol, -1 at the end
  int32_t len;   // bytes covered; 0 once merged into its left neighbour
};

struct QueuedMerge {
  int32_t rank;
  int32_t pos;
  int32_t new_id;
  // A max-heap pops the largest: invert so that the lowest rank,
  // then the leftmost position, comes first (as HF's Merge ordering).
  bool operator<(const QueuedMerge& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

}  // namespace

BpeModel::BpeModel(const json& model, const std::string& where) {
  const json& vocab = json_fields::require(model, "vocab", where);
  SEAM_CHECK(vocab.is_object(), where, ".vocab: expected an object {token: id}, got ", vocab.type_name());
  int64_t max_id = -1;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    SEAM_CHECK(it.value().is_number_integer(), where, ".vocab[\"", it.key(), "\"]: expected an integer id");
    const int64_t id = it.value().get<int64_t>();
    SEAM_CHECK(id >= 0 && id < (int64_t{1} << 28), where, ".vocab[\"", it.key(), "\"]: id ", id, " out of range");
    max_id = std::max(max_id, id);
  }
  id_to_token_.resize(static_cast<size_t>(max_id + 1));
  has_id_.assign(static_cast<size_t>(max_id + 1), false);
  vocab_.reserve(vocab.size());
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const auto id = static_cast<int32_t>(it.value().get<int64_t>());
    SEAM_CHECK(!has_id_[id], where, ".vocab: id ", id, " is used by both \"", id_to_token_[id], "\" and \"",
               it.key(), "\"");
    SEAM_CHECK(utf8::find_invalid(it.key()) == std::string::npos, where, ".vocab: a token is not valid UTF-8");
    vocab_.emplace(it.key(), id);
    id_to_token_[id] = it.key();
    has_id_[id] = true;
  }

  unk_token_ = json_fields::optional_string(model, "unk_token", "", where);
  fuse_unk_ = json_fields::optional_bool(model, "fuse_unk", false, where);
  byte_fallback_ = json_fields::optional_bool(model, "byte_fallback", false, where);
  ignore_merges_ = json_fields::optional_bool(model, "ignore_merges", false, where);
  continuing_subword_prefix_ = json_fields::optional_string(model, "continuing_subword_prefix", "", where);
  end_of_word_suffix_ = json_fields::optional_string(model, "end_of_word_suffix", "", where);
  if (auto it = model.find("dropout"); it != model.end() && !it->is_null()) {
    SEAM_CHECK(it->is_number(), where, ".dropout: expected a number or null");
    SEAM_CHECK(it->get<double>() == 0.0, where, ".dropout: BPE dropout (", it->get<double>(),
               ") is random and not supported for inference; set it to null");
  }
  if (!unk_token_.empty()) {
    auto it = vocab_.find(unk_token_);
    SEAM_CHECK(it != vocab_.end(), where, ".unk_token: \"", unk_token_, "\" is not in the vocabulary");
    unk_id_ = it->second;
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    auto it = vocab_.find(std::string_view(name));
    byte_ids_[b] = it == vocab_.end() ? -1 : it->second;
  }

  const json& merges = json_fields::require_array(model, "merges", where);
  merges_.reserve(merges.size() * 2);
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const json& m = merges[rank];
    std::string a, b;
    if (m.is_string()) {
      // "a b": exactly one space, as HF requires.
      const std::string& line = m.get_ref<const std::string&>();
      const size_t space = line.find(' ');
      SEAM_CHECK(space != std::string::npos && line.find(' ', space + 1) == std::string::npos, where,
                 ".merges[", rank, "]: expected \"left right\" with one space, got \"", line, "\"");
      a = line.substr(0, space);
      b = line.substr(space + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      a = m[0].get<std::string>();
      b = m[1].get<std::string>();
    } else {
      throw Error(where + ".merges[" + std::to_string(rank) + "]: expected \"left right\" or [\"left\", \"right\"]");
    }
    auto ia = vocab_.find(a), ib = vocab_.find(b);
    SEAM_CHECK(ia != vocab_.end(), where, ".merges[", rank, "]: \"", a, "\" is not in the vocabulary");
    SEAM_CHECK(ib != vocab_.end(), where, ".merges[", rank, "]: \"", b, "\" is not in the vocabulary");
    std::string_view b_rest = b;
    if (!continuing_subword_prefix_.empty() && b_rest.starts_with(continuing_subword_prefix_))
      b_rest.remove_prefix(continuing_subword_prefix_.size());
    const std::string joined = a + std::string(b_rest);
    auto ij = vocab_.find(joined);
    SEAM_CHECK(ij != vocab_.end(), where, ".merges[", rank, "]: the merged token \"", joined,
               "\" is not in the vocabulary");
    // A repeated pair takes its last rank, as HF's map build does.
    merges_[pair_key(ia->second, ib->second)] = Merge{static_cast<int32_t>(rank), ij->second};
  }
}

int32_t BpeModel::token_to_id(std::string_view token) const {
  auto it = vocab_.find(token);
  return it == vocab_.end() ? -1 : it->second;
}

size_t BpeModel::max_bytes_per_id(bool alphabet_known) const {
  const bool full_byte_fallback =
      byte_fallback_ && std::all_of(std::begin(byte_ids_), std::end(byte_ids_), [](int32_t id) { return id >= 0; });
  // With a subword prefix or word suffix a known character can still miss ("##x").
  const bool affixes = !continuing_subword_prefix_.empty() || !end_of_word_suffix_.empty();
  if (!full_byte_fallback && (!alphabet_known || affixes)) {
    if (unk_id_ < 0 || fuse_unk_) return 0;
  }
  size_t longest = 4;  // an unk stands for one character
  for (const std::string& t : id_to_token_) longest = std::max(longest, t.size());
  return longest;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || id >= id_limit() || !has_id_[id]) return nullptr;
  return &id_to_token_[id];
}

void BpeModel::tokenize(std::string_view piece, std::vector<int32_t>& out) const {
  if (piece.empty()) return;
  // ignore_merges: a pre-token that is itself in the vocabulary is that token.
  auto whole_token = [&]() -> bool {
    if (!ignore_merges_) return false;
    auto it = vocab_.find(piece);
    if (it == vocab_.end()) return false;
    out.push_back(it->second);
    return true;
  };
  if (piece.size() > kMaxKeyBytes) {
    if (!whole_token()) merge_word(piece, out);
    return;
  }
  // The cache holds tokenize()'s full answer (ignore_merges included), so it is asked first.
  const uint64_t hash = hash_bytes(piece);
  const size_t slot = hash & (kCacheSlots - 1);
  CacheEntry& entry = cache_.entries[slot];
  std::mutex& lock = cache_.locks[slot / kSlotsPerLock];
  {
    std::lock_guard<std::mutex> guard(lock);
    if (entry.n_ids > 0 && entry.hash == hash && entry.key_len == piece.size() &&
        std::memcmp(entry.key, piece.data(), piece.size()) == 0) {
      out.insert(out.end(), entry.ids, entry.ids + entry.n_ids);
      return;
    }
  }
  const size_t first = out.size();
  if (!whole_token()) merge_word(piece, out);
  const size_t n_ids = out.size() - first;
  if (n_ids == 0 || n_ids > kMaxIds) return;
  std::lock_guard<std::mutex> guard(lock);
  entry.hash = hash;
  entry.key_len = static_cast<uint8_t>(piece.size());
  entry.n_ids = static_cast<uint8_t>(n_ids);
  std::memcpy(entry.key, piece.data(), piece.size());
  std::copy(out.begin() + static_cast<long>(first), out.end(), entry.ids);
}

void BpeModel::merge_word(std::string_view word, std::vector<int32_t>& out) const {
  thread_local std::vector<Symbol> symbols;
  symbols.clear();
  auto add = [&](int32_t id, int32_t len) {
    const auto index = static_cast<int32_t>(symbols.size());
    if (index > 0) symbols.back().next = index;
    symbols.push_back({id, index - 1, -1, len});
  };

  // Initial symbols: one per character (HF's merge_word).
  int32_t pending_unk_len = 0;  // bytes of a pending (possibly fused) unk run
  const bool affixes = !continuing_subword_prefix_.empty() || !end_of_word_suffix_.empty();
  std::string symbol;
  for (size_t pos = 0; pos < word.size();) {
    const auto len = static_cast<int32_t>(utf8::sequence_length(static_cast<unsigned char>(word[pos])));
    std::string_view ch = word.substr(pos, static_cast<size_t>(len));
    std::string_view key = ch;
    if (affixes) {
      symbol.clear();
      if (pos != 0) symbol += continuing_subword_prefix_;
      symbol += ch;
      if (pos + static_cast<size_t>(len) >= word.size()) symbol += end_of_word_suffix_;
      key = symbol;
    }
    pos += static_cast<size_t>(len);
    auto it = vocab_.find(key);
    if (it != vocab_.end()) {
      if (pending_unk_len > 0) {
        add(unk_id_, pending_unk_len);
        pending_unk_len = 0;
      }
      add(it->second, len);
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (char c : key) all = all && byte_ids_[static_cast<unsigned char>(c)] >= 0;
      if (all) {
        for (char c : key) add(byte_ids_[static_cast<unsigned char>(c)], 1);
        continue;
      }
    }
    if (unk_id_ >= 0) {
      if (pending_unk_len > 0 && !fuse_unk_) add(unk_id_, pending_unk_len), pending_unk_len = 0;
      pending_unk_len += len;
    }
    // Without an unk token an unknown character is dropped, as in HF.
  }
  if (pending_unk_len > 0) add(unk_id_, pending_unk_len);

  // Merge the lowest-ranked pair first (leftmost among equals), exactly as
  // HF's Word::merge_all, including its check that skips stale queue entries.
  thread_local std::vector<QueuedMerge> queue;  // a binary heap (std::push_heap order)
  queue.clear();
  auto push = [&](QueuedMerge m) {
    queue.push_back(m);
    std::push_heap(queue.begin(), queue.end());
  };
  for (size_t i = 0; i + 1 < symbols.size(); ++i) {
    auto it = merges_.find(pair_key(symbols[i].id, symbols[i + 1].id));
    if (it != merges_.end()) push({it->second.rank, static_cast<int32_t>(i), it->second.new_id});
  }
  while (!queue.empty()) {
    std::pop_heap(queue.begin(), queue.end());
    const QueuedMerge top = queue.back();
    queue.pop_back();
    Symbol& left = symbols[top.pos];
    if (left.len == 0 || left.next == -1) continue;
    const int32_t next_pos = left.next;
    const Symbol right = symbols[next_pos];
    auto it = merges_.find(pair_key(left.id, right.id));
    if (it == merges_.end() || it->second.new_id != top.new_id) continue;
    left.id = top.new_id;
    left.len += right.len;
    left.next = right.next;
    symbols[next_pos].len = 0;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    if (left.prev >= 0) {
      auto p = merges_.find(pair_key(symbols[left.prev].id, left.id));
      if (p != merges_.end()) push({p->second.rank, left.prev, p->second.new_id});
    }
    if (left.next >= 0) {
      auto n = merges_.find(pair_key(left.id, symbols[left.next].id));
      if (n != merges_.end()) push({n->second.rank, top.pos, n->second.new_id});
    }
  }
  for (const Symbol& s : symbols)
    if (s.len != 0) out.push_back(s.id);
}

}  // namespace seam
