// load_tokenizer: the model folder picks tokenizer.json when present,
// tokenizer.model otherwise; tokenizer_config.json adds BOS/EOS conventions.
#include <filesystem>

#include "core/error.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/sentencepiece_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_config.h"

namespace seam {

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir) {
  namespace fs = std::filesystem;
  SEAM_CHECK(fs::is_directory(dir), dir, ": not a directory (expected a model folder with a tokenizer)");
  const TokenizerConfig config = read_tokenizer_config((fs::path(dir) / "tokenizer_config.json").string());
  const fs::path json_path = fs::path(dir) / "tokenizer.json";
  if (fs::exists(json_path)) return std::make_unique<HfTokenizer>(json_path.string(), config);
  const fs::path model_path = fs::path(dir) / "tokenizer.model";
  if (fs::exists(model_path)) return std::make_unique<SentencePieceTokenizer>(model_path.string(), config);
  throw Error(dir + ": no tokenizer.json or tokenizer.model in this folder");
}

}  // namespace seam
