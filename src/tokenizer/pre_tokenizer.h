// tokenizer.json pre-tokenizers: Split (regex or literal, all five delimiter
// behaviours, invert), ByteLevel, Metaspace, Digits, WhitespaceSplit and
// Sequence. They cut normalized text into the pieces the model encodes one
// by one; empty pieces are dropped, as in Hugging Face tokenizers. Pieces are
// streamed to a sink as they are found (no list of a long text's pieces).
#pragma once
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace seam {

class PreTokenizer {
 public:
  // Receives each piece; `at_text_start` is true when the piece begins at
  // offset 0 of the original text (Metaspace's prepend_scheme "first" adds
  // its prefix only there). The view is valid during the call only.
  using Sink = std::function<void(std::string_view piece, bool at_text_start)>;

  virtual ~PreTokenizer() = default;
  // Cuts `text` and hands every non-empty piece to `sink`, in order.
  virtual void pre_tokenize(std::string_view text, bool at_text_start, const Sink& sink) const = 0;
};

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& config, const std::string& where);

}  // namespace seam
