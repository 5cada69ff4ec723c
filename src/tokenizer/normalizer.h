// tokenizer.json normalizers: NFC, NFD, Prepend, Append, Replace, Strip,
// ByteLevel and Sequence of these -- what Llama, Mistral and Qwen files use.
// Any other type is rejected at load time with a clear error.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace seam {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Rewrites s (valid UTF-8) in place.
  virtual void normalize(std::string& s) const = 0;
};

// Builds the normalizer that `config` describes; `where` names it in errors.
std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& config, const std::string& where);

}  // namespace seam
