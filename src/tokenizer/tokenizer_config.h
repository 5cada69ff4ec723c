// The parts of a model folder's tokenizer_config.json that tokenization needs:
// add_bos_token / add_eos_token, the bos/eos/unk token names and the
// added_tokens_decoder table.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/added_vocabulary.h"

namespace seam {

struct TokenizerConfig {
  bool present = false;  // false when the folder has no tokenizer_config.json
  std::optional<bool> add_bos_token;
  std::optional<bool> add_eos_token;
  std::string bos_token;  // empty: not set
  std::string eos_token;
  std::string unk_token;
  std::vector<AddedToken> added_tokens;  // from added_tokens_decoder, by id
};

// Reads `path`; a missing file gives present == false, a malformed one throws seam::Error.
TokenizerConfig read_tokenizer_config(const std::string& path);

}  // namespace seam
