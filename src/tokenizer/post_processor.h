// tokenizer.json post-processors for a single sequence: TemplateProcessing
// (e.g. Llama-3's "<|begin_of_text|> $A"), BertProcessing / RobertaProcessing
// (cls $A sep), ByteLevel (offsets only: no change to ids) and Sequence.
// Applied only when the caller asks for special tokens.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace seam {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  virtual void process(std::vector<int32_t>& ids) const = 0;
  // The ids placed before the sequence (the BOS of Llama-3's template).
  virtual std::vector<int32_t> prefix_ids() const = 0;
};

std::unique_ptr<PostProcessor> make_post_processor(const nlohmann::json& config, const std::string& where);

}  // namespace seam
