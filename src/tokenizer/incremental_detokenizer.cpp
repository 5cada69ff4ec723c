#include "tokenizer/incremental_detokenizer.h"

namespace seam {

namespace {
// True when s ends in U+FFFD (the decoder's mark for bytes that are not yet a
// whole character) or in an incomplete UTF-8 sequence.
bool ends_incomplete(const std::string& s) {
  if (s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0) return true;
  // Walk back over continuation bytes to the lead byte of the last character.
  size_t i = s.size();
  int n_cont = 0;
  while (i > 0 && (uint8_t(s[i - 1]) & 0xC0) == 0x80 && n_cont < 4) --i, ++n_cont;
  if (i == 0) return n_cont > 0;
  const uint8_t lead = uint8_t(s[i - 1]);
  const int need = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : 0;
  return need > n_cont;
}
}  // namespace

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(tokenizer), skip_special_(skip_special_tokens) {}

std::string IncrementalDetokenizer::feed(int32_t id) {
  ids_.push_back(id);
  // Decode the window with and without the unread tokens: the difference is
  // the new text. Decoding a window (not just the new ids) keeps context-
  // dependent pieces right (SentencePiece's leading space, byte-fallback runs).
  const std::vector<int32_t> prefix(ids_.begin() + long(prefix_offset_), ids_.begin() + long(read_offset_));
  const std::vector<int32_t> full(ids_.begin() + long(prefix_offset_), ids_.end());
  const std::string prefix_text = tokenizer_.decode(prefix, skip_special_);
  const std::string full_text = tokenizer_.decode(full, skip_special_);
  if (full_text.size() <= prefix_text.size() || ends_incomplete(full_text)) return {};
  std::string delta = full_text.substr(prefix_text.size());
  prefix_offset_ = read_offset_;
  read_offset_ = ids_.size();
  return delta;
}

std::string IncrementalDetokenizer::flush() {
  if (read_offset_ == ids_.size()) return {};
  const std::vector<int32_t> prefix(ids_.begin() + long(prefix_offset_), ids_.begin() + long(read_offset_));
  const std::vector<int32_t> full(ids_.begin() + long(prefix_offset_), ids_.end());
  const std::string prefix_text = tokenizer_.decode(prefix, skip_special_);
  const std::string full_text = tokenizer_.decode(full, skip_special_);
  prefix_offset_ = read_offset_ = ids_.size();
  return full_text.size() > prefix_text.size() ? full_text.substr(prefix_text.size()) : std::string();
}

}  // namespace seam
