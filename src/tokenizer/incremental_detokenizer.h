// IncrementalDetokenizer: turns a stream of token ids into a stream of text
// deltas for streaming responses. It never emits half a UTF-8 character, and
// the concatenation of every feed() result and flush() equals
// decode(all ids). Per-token cost is bounded: only a window of recent tokens
// is re-decoded (vLLM's prefix_offset / read_offset scheme).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace seam {

class IncrementalDetokenizer {
 public:
  IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens);
  // Adds one id; returns the text that became final with it (may be empty).
  std::string feed(int32_t id);
  // Returns whatever is still held back (an incomplete character at the end).
  std::string flush();

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::vector<int32_t> ids_;
  size_t prefix_offset_ = 0;  // window start: decode(ids[prefix..read)) was already emitted
  size_t read_offset_ = 0;    // ids before this are accounted for in the emitted text
};

}  // namespace seam
