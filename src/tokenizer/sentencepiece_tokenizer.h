// A SentencePiece tokenizer.model (through libsentencepiece) with the
// tokenizer_config.json conventions of Hugging Face's LlamaTokenizer:
// add_bos_token / add_eos_token, and added tokens (added_tokens_decoder)
// matched whole inside the text; each text chunk between them is encoded by
// SentencePiece on its own (so it gets the dummy-prefix space).
#pragma once
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/added_vocabulary.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_config.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace seam {

class SentencePieceTokenizer : public Tokenizer {
 public:
  SentencePieceTokenizer(const std::string& model_path, const TokenizerConfig& config);
  ~SentencePieceTokenizer() override;

  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const override;
  // Stops between the chunks around added tokens once more than max_ids ids
  // are out (libsentencepiece encodes a chunk whole; the length check of
  // Tokenizer::encode_at_most bounds a chunk's bytes first).
  std::vector<int32_t> encode_limited(std::string_view text, bool add_special_tokens, size_t max_ids) const override;
  size_t max_bytes_per_token() const override { return collapses_whitespace_ ? 0 : max_bytes_per_token_; }
  // With remove_extra_whitespaces, the bytes that are not whitespace over the longest piece.
  size_t min_ids(std::string_view text) const override;
  // Pieces with '▁' as spaces, byte pieces as bytes (invalid byte runs become
  // U+FFFD per maximal invalid subpart), added/control tokens as their text,
  // and the single leading space of the result dropped when the model adds a
  // dummy prefix -- what HF's Llama decoder (Replace, ByteFallback, Fuse,
  // Strip) gives for valid text.
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const override;
  int vocab_size() const override { return vocab_size_; }
  int32_t bos_id() const override { return bos_id_; }
  int32_t eos_id() const override { return eos_id_; }
  bool is_special(int32_t id) const override;
  int32_t token_to_id(std::string_view token) const override;
  std::string token_bytes(int32_t id) const override;
  std::string id_to_token(int32_t id) const override;

 private:
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  AddedVocabulary added_;
  std::vector<std::string> pieces_;  // [vocab_size] piece text per id
  std::vector<int16_t> byte_value_;  // [vocab_size] 0..255 for <0xXX> byte pieces, else -1
  std::vector<bool> special_;        // [vocab_size] control / unknown / special added tokens
  int vocab_size_ = 0;
  int32_t bos_id_ = -1;
  int32_t eos_id_ = -1;
  bool add_bos_ = true;
  bool add_eos_ = false;
  bool dummy_prefix_ = true;
  size_t max_bytes_per_token_ = 0;     // 0: no bound (text_bound.h); of the non-whitespace bytes when
  bool collapses_whitespace_ = false;  // the normalizer collapses runs of spaces (remove_extra_whitespaces)
};

}  // namespace seam
