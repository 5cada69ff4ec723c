#include "tokenizer/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "tokenizer/sentencepiece_spec.h"
#include "tokenizer/text_bound.h"
#include "tokenizer/utf8.h"

namespace seam {

namespace {
constexpr std::string_view kMetaSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// A piece's text: each meta space (U+2581) is a space.
void append_piece_text(const std::string& piece, std::string& out) {
  for (size_t pos = 0; pos < piece.size();) {
    if (piece.compare(pos, kMetaSpace.size(), kMetaSpace) == 0) {
      out += ' ';
      pos += kMetaSpace.size();
    } else {
      out += piece[pos++];
    }
  }
}
}  // namespace

SentencePieceTokenizer::SentencePieceTokenizer(const std::string& model_path, const TokenizerConfig& config)
    : sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
  std::ifstream in(model_path, std::ios::binary);
  SEAM_CHECK(in, model_path, ": cannot open");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string bytes = buffer.str();
  SEAM_CHECK(!bytes.empty(), model_path, ": the file is empty");
  const auto status = sp_->LoadFromSerializedProto(bytes);
  SEAM_CHECK(status.ok(), model_path, ": not a valid SentencePiece model: ", status.ToString());
  vocab_size_ = sp_->GetPieceSize();
  SEAM_CHECK(vocab_size_ > 0, model_path, ": the model has no pieces");

  pieces_.resize(vocab_size_);
  byte_value_.assign(vocab_size_, -1);
  special_.assign(vocab_size_, false);
  for (int id = 0; id < vocab_size_; ++id) {
    pieces_[id] = sp_->IdToPiece(id);
    if (sp_->IsByte(id)) {
      const std::string& p = pieces_[id];  // "<0xAB>"
      SEAM_CHECK(p.size() == 6 && p.starts_with("<0x"), model_path, ": byte piece ", id, " is named '", p, "'");
      byte_value_[id] = static_cast<int16_t>(std::stoi(p.substr(3, 2), nullptr, 16));
    }
    if (sp_->IsControl(id) || sp_->IsUnknown(id)) special_[id] = true;
  }

  // Added tokens: tokenizer_config.json's table, else the control pieces.
  std::vector<AddedToken> tokens = config.added_tokens;
  if (tokens.empty()) {
    for (int id = 0; id < vocab_size_; ++id) {
      if (!special_[id]) continue;
      AddedToken t;
      t.id = id;
      t.content = pieces_[id];
      t.special = true;
      tokens.push_back(t);
    }
  }
  for (const AddedToken& t : tokens) {
    SEAM_CHECK(t.id >= 0 && t.id < vocab_size_, model_path, ": added token '", t.content, "' has id ", t.id,
               " outside the vocabulary (", vocab_size_, ")");
    special_[t.id] = special_[t.id] || t.special;
  }
  added_.build(std::move(tokens), [](const std::string& s) { return s; });

  auto lookup = [&](const std::string& name, int fallback) -> int32_t {
    if (name.empty()) return fallback;
    const int32_t id = token_to_id(name);
    SEAM_CHECK(id >= 0, model_path, ": tokenizer_config.json names token '", name, "', which is not in the vocabulary");
    return id;
  };
  bos_id_ = lookup(config.bos_token, sp_->bos_id());
  eos_id_ = lookup(config.eos_token, sp_->eos_id());
  add_bos_ = config.add_bos_token.value_or(true) && bos_id_ >= 0;
  add_eos_ = config.add_eos_token.value_or(false) && eos_id_ >= 0;
  // Whether the model prepends '▁' (normalizer add_dummy_prefix): its first piece shows it.
  std::vector<std::string> probe;
  dummy_prefix_ = sp_->Encode("a", &probe).ok() && !probe.empty() && probe[0].starts_with(kMetaSpace);

  // A piece covers at most its own bytes ('▁' is 3 bytes for a 1-byte space),
  // a byte piece one byte. Without byte fallback SentencePiece folds a run of
  // unknown characters into one unk; a normalizer charsmap (NFKC) or a word
  // model can shrink text without bound. remove_extra_whitespaces (the
  // default; stories260K has it) drops only spaces: the other bytes still bound.
  const SentencePieceSpec spec = read_sentencepiece_spec(bytes);
  const bool bounded = (spec.model_type == 1 || spec.model_type == 2) && spec.byte_fallback && spec.identity_normalizer;
  collapses_whitespace_ = spec.remove_extra_whitespaces;
  const size_t added_bytes = text_bound::added_tokens_bound(added_.tokens());
  if (bounded && added_bytes > 0) {
    size_t longest = added_bytes;
    for (const std::string& p : pieces_) longest = std::max(longest, p.size());
    max_bytes_per_token_ = longest;
  }
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

size_t SentencePieceTokenizer::min_ids(std::string_view text) const {
  if (max_bytes_per_token_ == 0) return 0;
  return (collapses_whitespace_ ? text_bound::count_non_space_bytes(text) : text.size()) / max_bytes_per_token_;
}

bool SentencePieceTokenizer::is_special(int32_t id) const {
  return id >= 0 && id < vocab_size_ && special_[id];
}

std::string SentencePieceTokenizer::id_to_token(int32_t id) const {
  if (const AddedToken* t = added_.find_id(id)) return t->content;
  return id >= 0 && id < vocab_size_ ? pieces_[size_t(id)] : std::string();
}

int32_t SentencePieceTokenizer::token_to_id(std::string_view token) const {
  const int32_t added = added_.find_content(token);
  if (added >= 0) return added;
  const int id = sp_->PieceToId(std::string(token));
  // PieceToId answers unk for unknown pieces.
  return id >= 0 && id < vocab_size_ && pieces_[id] == token ? id : -1;
}

std::vector<int32_t> SentencePieceTokenizer::encode(std::string_view text, bool add_special_tokens) const {
  return encode_limited(text, add_special_tokens, SIZE_MAX);
}

std::vector<int32_t> SentencePieceTokenizer::encode_limited(std::string_view text, bool add_special_tokens,
                                                            size_t max_ids) const {
  const size_t bad = utf8::find_invalid(text);
  SEAM_CHECK(bad == std::string_view::npos, "tokenizer: the text is not valid UTF-8 (byte ", bad, ")");
  std::vector<int32_t> ids;
  if (add_special_tokens && add_bos_) ids.push_back(bos_id_);
  std::vector<TextSpan> spans;
  added_.split_raw(text, spans);
  std::vector<int> chunk;
  for (const TextSpan& span : spans) {
    if (ids.size() > max_ids) return ids;
    if (span.id >= 0) {
      ids.push_back(span.id);
      continue;
    }
    if (span.end == span.begin) continue;
    chunk.clear();
    const auto status = sp_->Encode(text.substr(span.begin, span.end - span.begin), &chunk);
    SEAM_CHECK(status.ok(), "tokenizer: SentencePiece failed to encode: ", status.ToString());
    ids.insert(ids.end(), chunk.begin(), chunk.end());
  }
  if (add_special_tokens && add_eos_) ids.push_back(eos_id_);
  return ids;
}

std::string SentencePieceTokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  std::string out;
  std::string bytes;  // a pending run of byte pieces
  auto flush_bytes = [&]() {
    out += utf8::to_valid_lossy(bytes);
    bytes.clear();
  };
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size_) continue;  // unknown ids are dropped, as in HF
    if (skip_special_tokens && special_[id]) continue;
    if (byte_value_[id] >= 0) {
      bytes.push_back(static_cast<char>(byte_value_[id]));
      continue;
    }
    flush_bytes();
    if (const AddedToken* t = added_.find_id(id)) {
      out += t->content;
      continue;
    }
    append_piece_text(pieces_[id], out);
  }
  flush_bytes();
  if (dummy_prefix_ && !out.empty() && out[0] == ' ') out.erase(0, 1);
  return out;
}

std::string SentencePieceTokenizer::token_bytes(int32_t id) const {
  if (id < 0 || id >= vocab_size_) return {};
  if (byte_value_[id] >= 0) return std::string(1, static_cast<char>(byte_value_[id]));
  if (const AddedToken* t = added_.find_id(id)) return t->content;
  std::string out;
  append_piece_text(pieces_[id], out);
  return out;
}

}  // namespace seam
