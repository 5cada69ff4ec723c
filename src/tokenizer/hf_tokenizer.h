// A Hugging Face tokenizer.json (BPE model) in C++: added tokens, normalizer,
// pre-tokenizer, BPE, post-processor and decoder with the semantics of the
// `tokenizers` library, so that ids match it for every text.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/added_vocabulary.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_config.h"

namespace seam {

class HfTokenizer : public Tokenizer {
 public:
  // Parses `json_path`; `config` (the folder's tokenizer_config.json, maybe
  // absent) names bos/eos. Throws seam::Error naming the file and field.
  HfTokenizer(const std::string& json_path, const TokenizerConfig& config);

  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const override;
  // Stops between pre-tokens once more than max_ids ids are out.
  std::vector<int32_t> encode_limited(std::string_view text, bool add_special_tokens, size_t max_ids) const override;
  size_t max_bytes_per_token() const override { return max_bytes_per_token_; }
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const override;
  // One past the largest id of the model vocabulary and the added tokens.
  int vocab_size() const override { return vocab_size_; }
  int32_t bos_id() const override { return bos_id_; }
  int32_t eos_id() const override { return eos_id_; }
  bool is_special(int32_t id) const override;
  int32_t token_to_id(std::string_view token) const override;
  std::string token_bytes(int32_t id) const override;
  std::string id_to_token(int32_t id) const override;

 private:
  size_t bytes_per_token_bound(const nlohmann::json& root) const;
  void encode_segment(std::string_view text, bool at_text_start, std::vector<int32_t>& ids, size_t max_ids) const;

  std::string path_;
  AddedVocabulary added_;
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<PostProcessor> post_processor_;
  std::unique_ptr<Decoder> decoder_;
  std::vector<int32_t> bos_when_no_post_processor_;  // tokenizer_config add_bos_token without a post-processor
  int vocab_size_ = 0;
  int32_t bos_id_ = -1;
  int32_t eos_id_ = -1;
  bool byte_level_decoder_ = false;  // the decoder (or one in its Sequence) is ByteLevel
  size_t max_bytes_per_token_ = 0;  // 0: no bound (text_bound.h)
};

}  // namespace seam
