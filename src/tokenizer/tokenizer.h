// Tokenizer: text <-> token ids. Two implementations: SentencePiece
// (tokenizer.model) and Hugging Face tokenizer.json (byte-level BPE and
// SentencePiece-style BPE). load_tokenizer picks tokenizer.json when present.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
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

  // The most bytes of input text one id can stand for, derived from the
  // tokenizer's files (text_bound.h), or 0 when they prove no bound. A text
  // longer than this times n bytes encodes to more than n ids.
  virtual size_t max_bytes_per_token() const { return 0; }
  // A lower bound on the number of ids `text` encodes to (0: none known), in
  // one pass over the text without allocating. By default its length over
  // max_bytes_per_token(); a tokenizer that drops only whitespace counts the
  // other bytes.
  virtual size_t min_ids(std::string_view text) const {
    const size_t per_id = max_bytes_per_token();
    return per_id > 0 ? text.size() / per_id : 0;
  }
  // encode(), except that it may stop once more than `max_ids` ids are out;
  // the result then has more than max_ids ids but is not the whole encoding.
  virtual std::vector<int32_t> encode_limited(std::string_view text, bool add_special_tokens, size_t max_ids) const {
    (void)max_ids;
    return encode(text, add_special_tokens);
  }

  // The ids of `text` when there are at most `max_ids` of them, else nullopt.
  // A text that cannot fit by its length alone is refused before any
  // tokenization; otherwise tokenization stops at the first id past the
  // limit, so time and memory follow max_ids, not the text's length.
  std::optional<std::vector<int32_t>> encode_at_most(std::string_view text, bool add_special_tokens,
                                                     size_t max_ids) const {
    if (min_ids(text) > max_ids) return std::nullopt;
    std::vector<int32_t> ids = encode_limited(text, add_special_tokens, max_ids);
    if (ids.size() > max_ids) return std::nullopt;
    return ids;
  }
  // The vocabulary's string for `id` ("▁Once", "<0x0A>", "<s>"), as Hugging
  // Face's convert_ids_to_tokens gives it; "" for an id outside the vocabulary.
  virtual std::string id_to_token(int32_t id) const = 0;
};

// Loads `dir/tokenizer.json` if present, else `dir/tokenizer.model` (with
// `dir/tokenizer_config.json`). Throws seam::Error naming the file and the problem.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir);

}  // namespace seam
