// tokenizer.json decoders: ByteLevel, Metaspace, ByteFallback, Fuse, Strip,
// Replace, BPEDecoder and Sequence -- the byte-level chain of GPT-2 / Llama-3 /
// Qwen2 files and the Replace/ByteFallback/Fuse/Strip (or Metaspace) chain of
// SentencePiece-style files. Each works on the token list, as HF's decode_chain.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace seam {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};

std::unique_ptr<Decoder> make_decoder(const nlohmann::json& config, const std::string& where);

}  // namespace seam
