#include "tokenizer/incremental_detokenizer.h"

#include <algorithm>

#include "tokenizer/utf8.h"

namespace seam {

namespace {

// True when s ends in U+FFFD (how decoders render bytes that are not yet a
// whole character) or in an incomplete UTF-8 sequence.
bool ends_incomplete(const std::string& s) {
  if (s.size() >= 3 && s.compare(s.size() - 3, 3, utf8::kReplacementChar) == 0) return true;
  return utf8::incomplete_tail(s) > 0;
}

// The text of `full` past `prefix`. When decoding was not prefix-stable (the
// window's older text changed), the cut is moved forward to a character
// boundary so that no delta ever holds a partial character.
std::string delta_after(const std::string& full, const std::string& prefix) {
  size_t cut = prefix.size();
  if (full.compare(0, prefix.size(), prefix) != 0) {
    while (cut < full.size() && (static_cast<unsigned char>(full[cut]) & 0xC0) == 0x80) ++cut;
  }
  return cut < full.size() ? full.substr(cut) : std::string();
}

}  // namespace

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens,
                                               const std::vector<int32_t>& context_ids)
    : tokenizer_(tokenizer), skip_special_(skip_special_tokens) {
  const size_t n_keep = std::min(context_ids.size(), kContextTokens);
  ids_.assign(context_ids.end() - static_cast<long>(n_keep), context_ids.end());
  prefix_offset_ = 0;
  read_offset_ = ids_.size();
}

std::string IncrementalDetokenizer::feed(int32_t id) {
  ids_.push_back(id);
  // Decode the window with and without the unread tokens: the difference is
  // the new text. Decoding a window (not just the new ids) keeps context-
  // dependent pieces right (SentencePiece's leading space, byte runs).
  const std::vector<int32_t> prefix(ids_.begin() + static_cast<long>(prefix_offset_),
                                    ids_.begin() + static_cast<long>(read_offset_));
  const std::vector<int32_t> full(ids_.begin() + static_cast<long>(prefix_offset_), ids_.end());
  const std::string prefix_text = tokenizer_.decode(prefix, skip_special_);
  const std::string full_text = tokenizer_.decode(full, skip_special_);
  if (full_text.size() <= prefix_text.size() || ends_incomplete(full_text)) return {};
  std::string delta = delta_after(full_text, prefix_text);
  // Slide the window: what was read becomes the new prefix; older ids go.
  ids_.erase(ids_.begin(), ids_.begin() + static_cast<long>(read_offset_));
  prefix_offset_ = 0;
  read_offset_ = ids_.size();
  return delta;
}

std::string IncrementalDetokenizer::flush() {
  if (read_offset_ == ids_.size()) return {};
  const std::vector<int32_t> prefix(ids_.begin() + static_cast<long>(prefix_offset_),
                                    ids_.begin() + static_cast<long>(read_offset_));
  const std::vector<int32_t> full(ids_.begin() + static_cast<long>(prefix_offset_), ids_.end());
  const std::string prefix_text = tokenizer_.decode(prefix, skip_special_);
  const std::string full_text = tokenizer_.decode(full, skip_special_);
  ids_.erase(ids_.begin(), ids_.begin() + static_cast<long>(read_offset_));
  prefix_offset_ = 0;
  read_offset_ = ids_.size();
  return full_text.size() > prefix_text.size() ? delta_after(full_text, prefix_text) : std::string();
}

}  // namespace seam
