// Tokenizer: text <-> token ids. Two implementations: SentencePiece
// (tokenizer.model) and Hugging Face tokenizer.json (byte-level BPE and
// SentencePiece-style BPE). load_tokenizer picks tokenizer.json when present.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace seam {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // add_special_tokens: BOS etc. as the folder's tokenizer_config / post-processor says.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const = 0;
  // Decodes ids to text; special tokens are dropped when skip_special_tokens.
  virtual std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const = 0;
  virtual int vocab_size() const = 0;
  virtual int32_t bos_id() const = 0;  // -1 when none
  virtual int32_t eos_id() const = 0;  // -1 when none
  virtual bool is_special(int32_t id) const = 0;
  // The id of a token string such as "<|eot_id|>", or -1.
  virtual int32_t token_to_id(std::string_view token) const = 0;
  // The raw bytes one token contributes in the middle of a text: byte-level BPE
  // characters mapped back to bytes, SentencePiece '▁' as a space, byte-fallback
  // pieces <0xXX> as their byte (so a token may be a partial UTF-8 sequence), an
  // added token as its content. No dummy-prefix stripping, no lossy UTF-8 repair
  // (what decode does to whole texts). The grammar engine's vocabulary is built
  // from it. The default decodes the id alone (lossy for partial sequences).
  virtual std::string token_bytes(int32_t id) const { return decode({id}, false); }
  // The vocabulary's string for `id` ("▁Once", "<0x0A>", "<s>"), as Hugging
  // Face's convert_ids_to_tokens gives it; "" for an id outside the vocabulary.
  virtual std::string id_to_token(int32_t id) const = 0;
};

// Loads `dir/tokenizer.json` if present, else `dir/tokenizer.model` (with
// `dir/tokenizer_config.json`). Throws seam::Error naming the file and the problem.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir);

}  // namespace seam
