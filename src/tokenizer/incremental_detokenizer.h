// IncrementalDetokenizer: turns a stream of token ids into a stream of text
// deltas for streaming responses. It never emits half a UTF-8 character, and
// the concatenation of every feed() result and flush() equals
// decode(context + all ids) minus decode(context) whenever decoding is
// prefix-stable -- always for byte-level (GPT-2 / Llama-3 / Qwen2) and
// SentencePiece tokenizers; for tokenizer.json files with a ByteFallback
// decoder, whenever the byte tokens form valid UTF-8 (an invalid run turns
// into U+FFFD per byte there, which can rewrite text already streamed).
// Per-token cost is bounded: only a window of recent tokens is re-decoded
// (vLLM's prefix_offset / read_offset scheme), never the whole sequence.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace seam {

class IncrementalDetokenizer {
 public:
  // `context_ids` (e.g. the prompt) are decoded with the new ids but never
  // emitted: they make the first delta right (" were" after "Lily and Tom",
  // where a SentencePiece decode of the new ids alone would drop the space).
  IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens,
                         const std::vector<int32_t>& context_ids = {});
  // Adds one id; returns the text that became final with it (may be empty).
  std::string feed(int32_t id);
  // Returns whatever is still held back (an incomplete character at the end,
  // as the decoder renders it) and starts a fresh window.
  std::string flush();

  // The context tokens kept before the first new id (vLLM uses 5).
  static constexpr size_t kContextTokens = 5;

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::vector<int32_t> ids_;  // only the window is needed; older ids are dropped
  size_t prefix_offset_ = 0;  // window start: decode(ids[prefix..read)) was already emitted
  size_t read_offset_ = 0;    // ids before this are accounted for in the emitted text
};

}  // namespace seam
