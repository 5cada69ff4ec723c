// tokenizer.json pre-tokenizers: Split (regex or literal, all five delimiter
// behaviours, invert), ByteLevel, Metaspace, Digits, WhitespaceSplit and
// Sequence. They cut normalized text into the pieces the model encodes one
// by one; empty pieces are dropped, as in Hugging Face tokenizers.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace seam {

struct PreToken {
  std::string text;
  // True when the piece begins at offset 0 of the original text (Metaspace's
  // prepend_scheme "first" adds its prefix only there).
  bool at_text_start = false;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces `pieces` with their pre-tokenized sub-pieces, in order.
  virtual void pre_tokenize(std::vector<PreToken>& pieces) const = 0;
};

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& config, const std::string& where);

}  // namespace seam
