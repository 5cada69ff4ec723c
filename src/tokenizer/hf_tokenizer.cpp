#include "tokenizer/hf_tokenizer.h"

#include <cctype>
#include <fstream>
#include <sstream>

#include "core/json_parse.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/text_bound.h"
#include "tokenizer/utf8.h"

namespace seam {

namespace {

using json_fields::json;

json read_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  SEAM_CHECK(in, path, ": cannot open");
  std::stringstream buffer;
  buffer << in.rdbuf();
  try {
    return json::parse(buffer.str());
  } catch (const json::exception& e) {
    throw Error(path + ": not valid JSON: " + json_error_text(e));
  }
}

const json* optional_object(const json& root, const char* key) {
  auto it = root.find(key);
  return it == root.end() || it->is_null() ? nullptr : &*it;
}

// Whether a decoder config is ByteLevel or a Sequence holding one: then a
// token's characters stand for bytes (GPT-2's byte-to-unicode map).
bool has_byte_level_decoder(const json& d) {
  if (!d.is_object()) return false;
  const auto type = d.find("type");
  if (type != d.end() && type->is_string() && *type == "ByteLevel") return true;
  const auto list = d.find("decoders");
  if (list == d.end() || !list->is_array()) return false;
  for (const json& e : *list)
    if (has_byte_level_decoder(e)) return true;
  return false;
}

const json& stage_or_null(const json& root, const char* key) {
  static const json null_stage;
  const json* stage = optional_object(root, key);
  return stage ? *stage : null_stage;
}

// Thrown by the pre-tokenizer's sink to stop encoding at the id limit.
struct IdLimitReached {};

}  // namespace

HfTokenizer::HfTokenizer(const std::string& json_path, const TokenizerConfig& config) : path_(json_path) {
  const json root = read_json(json_path);
  SEAM_CHECK(root.is_object(), json_path, ": expected a JSON object at the top level");
  try {
    const json& model = json_fields::require(root, "model", json_path);
    const std::string type = json_fields::optional_string(model, "type", "BPE", json_path + ".model");
    SEAM_CHECK(type == "BPE", json_path, ".model.type: unsupported model type '", type,
               "' (seam supports BPE tokenizer.json files)");
    model_ = std::make_unique<BpeModel>(model, json_path + ".model");
    if (const json* n = optional_object(root, "normalizer")) normalizer_ = make_normalizer(*n, json_path + ".normalizer");
    if (const json* p = optional_object(root, "pre_tokenizer"))
      pre_tokenizer_ = make_pre_tokenizer(*p, json_path + ".pre_tokenizer");
    if (const json* p = optional_object(root, "post_processor"))
      post_processor_ = make_post_processor(*p, json_path + ".post_processor");
    if (const json* d = optional_object(root, "decoder")) {
      decoder_ = make_decoder(*d, json_path + ".decoder");
      byte_level_decoder_ = has_byte_level_decoder(*d);
    }

    std::vector<AddedToken> tokens;
    if (const json* list = optional_object(root, "added_tokens")) {
      SEAM_CHECK(list->is_array(), json_path, ".added_tokens: expected an array");
      for (size_t i = 0; i < list->size(); ++i) {
        const std::string where = json_path + ".added_tokens[" + std::to_string(i) + "]";
        const json& t = (*list)[i];
        AddedToken token;
        const int64_t id = json_fields::require_int(t, "id", where);
        SEAM_CHECK(id >= 0 && id < (int64_t{1} << 28), where, ".id: ", id, " out of range");
        token.id = static_cast<int32_t>(id);
        token.content = json_fields::require_string(t, "content", where);
        SEAM_CHECK(!token.content.empty(), where, ".content: must not be empty");
        SEAM_CHECK(utf8::find_invalid(token.content) == std::string::npos, where, ".content: not valid UTF-8");
        token.single_word = json_fields::optional_bool(t, "single_word", false, where);
        token.lstrip = json_fields::optional_bool(t, "lstrip", false, where);
        token.rstrip = json_fields::optional_bool(t, "rstrip", false, where);
        token.special = json_fields::optional_bool(t, "special", false, where);
        token.normalized = json_fields::optional_bool(t, "normalized", !token.special, where);
        tokens.push_back(std::move(token));
      }
    }
    // HF lists special tokens before the others in its matcher; with
    // leftmost-longest matching the order only matters for identical
    // contents, which the vocabulary keeps once.
    std::stable_partition(tokens.begin(), tokens.end(), [](const AddedToken& t) { return t.special; });
    added_.build(std::move(tokens), [this](const std::string& content) {
      std::string s = content;
      if (normalizer_) normalizer_->normalize(s);
      return s;
    });
    max_bytes_per_token_ = bytes_per_token_bound(root);
  } catch (const json::exception& e) {
    throw Error(json_path + ": unexpected JSON content: " + e.what());
  }

  vocab_size_ = model_->id_limit();
  for (const AddedToken& t : added_.tokens()) vocab_size_ = std::max(vocab_size_, t.id + 1);

  // BOS/EOS: tokenizer_config.json names them; otherwise BOS is the first
  // token the post-processor puts in front of the text.
  if (!config.bos_token.empty()) bos_id_ = token_to_id(config.bos_token);
  if (bos_id_ < 0 && post_processor_) {
    const std::vector<int32_t> prefix = post_processor_->prefix_ids();
    if (!prefix.empty()) bos_id_ = prefix.front();
  }
  if (!config.eos_token.empty()) eos_id_ = token_to_id(config.eos_token);
  if (!post_processor_ && config.add_bos_token.value_or(false) && bos_id_ >= 0)
    bos_when_no_post_processor_.push_back(bos_id_);
}

// Raw text -> normalizer -> pre-tokenizer -> model: an id covers at most the
// model's (or an added token's) bytes of normalized text, and the normalizer
// shrinks by at most its factor; any stage that can drop text removes the bound.
size_t HfTokenizer::bytes_per_token_bound(const json& root) const {
  const json& normalizer = stage_or_null(root, "normalizer");
  const json& pre_tokenizer = stage_or_null(root, "pre_tokenizer");
  if (!text_bound::pre_tokenizer_keeps_text(pre_tokenizer)) return 0;
  bool alphabet_known = false;
  if (text_bound::maps_to_byte_alphabet(normalizer) || text_bound::maps_to_byte_alphabet(pre_tokenizer)) {
    alphabet_known = true;
    for (int b = 0; b < 256 && alphabet_known; ++b)
      alphabet_known = model_->token_to_id(byte_level::byte_to_char(uint8_t(b))) >= 0;
  }
  const size_t model_bytes = model_->max_bytes_per_id(alphabet_known);
  const size_t added_bytes = text_bound::added_tokens_bound(added_.tokens());
  if (model_bytes == 0 || added_bytes == 0) return 0;
  return text_bound::times(text_bound::normalizer_shrink(normalizer), std::max(model_bytes, added_bytes));
}

bool HfTokenizer::is_special(int32_t id) const {
  const AddedToken* t = added_.find_id(id);
  return t != nullptr && t->special;
}

std::string HfTokenizer::id_to_token(int32_t id) const {
  if (const AddedToken* t = added_.find_id(id)) return t->content;
  const std::string* s = model_->id_to_token(id);
  return s ? *s : std::string();
}

int32_t HfTokenizer::token_to_id(std::string_view token) const {
  const int32_t added = added_.find_content(token);
  return added >= 0 ? added : model_->token_to_id(token);
}

void HfTokenizer::encode_segment(std::string_view text, bool at_text_start, std::vector<int32_t>& ids,
                                 size_t max_ids) const {
  if (!pre_tokenizer_) {
    model_->tokenize(text, ids);
    return;
  }
  pre_tokenizer_->pre_tokenize(text, at_text_start, [&](std::string_view piece, bool) {
    model_->tokenize(piece, ids);
    if (ids.size() > max_ids) throw IdLimitReached{};
  });
}

std::vector<int32_t> HfTokenizer::encode(std::string_view text, bool add_special_tokens) const {
  return encode_limited(text, add_special_tokens, SIZE_MAX);
}

std::vector<int32_t> HfTokenizer::encode_limited(std::string_view text, bool add_special_tokens, size_t max_ids) const {
  const size_t bad = utf8::find_invalid(text);
  SEAM_CHECK(bad == std::string_view::npos, "tokenizer: the text is not valid UTF-8 (byte ", bad, ")");
  std::vector<int32_t> ids;
  ids.reserve(std::min(text.size() / 3, max_ids) + 4);
  std::vector<TextSpan> raw, normalized_spans;
  added_.split_raw(text, raw);
  std::string normalized;
  for (const TextSpan& span : raw) {
    if (ids.size() > max_ids) return ids;
    if (span.id >= 0) {
      ids.push_back(span.id);
      continue;
    }
    if (span.end == span.begin) continue;
    const bool at_start = span.begin == 0;
    normalized.assign(text.substr(span.begin, span.end - span.begin));
    if (normalizer_) normalizer_->normalize(normalized);
    normalized_spans.clear();
    added_.split_normalized(normalized, normalized_spans);
    for (const TextSpan& sub : normalized_spans) {
      if (ids.size() > max_ids) return ids;
      if (sub.id >= 0) {
        ids.push_back(sub.id);
      } else if (sub.end > sub.begin) {
        try {
          encode_segment(std::string_view(normalized).substr(sub.begin, sub.end - sub.begin),
                         at_start && sub.begin == 0, ids, max_ids);
        } catch (const IdLimitReached&) {
          return ids;
        }
      }
    }
  }
  if (add_special_tokens) {
    if (post_processor_) {
      post_processor_->process(ids);
    } else {
      ids.insert(ids.begin(), bos_when_no_post_processor_.begin(), bos_when_no_post_processor_.end());
    }
  }
  return ids;
}

std::string HfTokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (const AddedToken* t = added_.find_id(id)) {
      // A normalized token decodes as its normalized form, as in HF.
      if (!(skip_special_tokens && t->special)) tokens.push_back(t->normalized_content);
      continue;
    }
    const std::string* token = model_->id_to_token(id);
    if (token == nullptr) continue;  // unknown ids are dropped, as in HF
    if (skip_special_tokens && is_special(added_.find_content(*token))) continue;
    tokens.push_back(*token);
  }
  if (!decoder_) {
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i) out += ' ';
      out += tokens[i];
    }
    return out;
  }
  decoder_->decode_chain(tokens);
  std::string out;
  for (const std::string& t : tokens) out += t;
  return out;
}

// Mid-text bytes of one token: no Strip of a leading space, no lossy UTF-8
// repair, so partial multi-byte tokens keep their bytes.
std::string HfTokenizer::token_bytes(int32_t id) const {
  if (const AddedToken* t = added_.find_id(id)) return t->normalized_content;
  const std::string* token = model_->id_to_token(id);
  if (token == nullptr) return {};
  const std::string& t = *token;
  if (t.size() == 6 && t.starts_with("<0x") && t.back() == '>') {  // byte fallback
    if (std::isxdigit(static_cast<unsigned char>(t[3])) && std::isxdigit(static_cast<unsigned char>(t[4])))
      return std::string(1, static_cast<char>(std::stoi(t.substr(3, 2), nullptr, 16)));
  }
  std::string out;
  if (byte_level_decoder_) {
    for (size_t pos = 0; pos < t.size();) {
      size_t n;
      const int b = byte_level::char_to_byte(utf8::decode_at(t, pos, &n));
      if (b < 0) return t;  // not a byte-level token: its own UTF-8, as the decoder does
      out.push_back(static_cast<char>(b));
      pos += n;
    }
    return out;
  }
  static constexpr std::string_view kMetaSpace = "\xE2\x96\x81";  // SentencePiece-style files
  for (size_t pos = 0; pos < t.size();) {
    if (t.compare(pos, kMetaSpace.size(), kMetaSpace) == 0) {
      out += ' ';
      pos += kMetaSpace.size();
    } else {
      out += t[pos++];
    }
  }
  return out;
}

}  // namespace seam
