#include "tokenizer/text_bound.h"

#include <algorithm>

namespace seam::text_bound {

namespace {
using json = nlohmann::json;

std::string type_of(const json& stage) {
  auto it = stage.find("type");
  return it != stage.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Unicode normalization shrinks a text by at most this factor. The shrinking
// cases are singletons to shorter characters (U+212A KELVIN SIGN, 3 bytes ->
// 'K', 1 byte) and compositions (Hangul L V T jamo, 9 bytes -> one 3-byte
// syllable); text_bound_test checks every code point and every canonical
// decomposition stays within 3, and 4 leaves a margin.
constexpr size_t k_unicode_normalization_shrink = 4;
}  // namespace

size_t normalizer_shrink(const json& n) {
  if (n.is_null()) return 1;
  const std::string type = type_of(n);
  if (type == "NFC" || type == "NFD") return k_unicode_normalization_shrink;
  // Prepend / Append add bytes; ByteLevel maps a byte to one or two.
  if (type == "Prepend" || type == "Append" || type == "ByteLevel") return 1;
  if (type == "Replace") {
    // A literal pattern of p bytes becomes the content's c bytes: shrink <= ceil(p / c).
    // A regex can match runs of any length, and empty content deletes.
    auto pattern = n.find("pattern");
    auto content = n.find("content");
    if (pattern == n.end() || !pattern->is_object() || content == n.end() || !content->is_string()) return 0;
    auto literal = pattern->find("String");
    if (literal == pattern->end() || !literal->is_string()) return 0;
    const size_t p = literal->get_ref<const std::string&>().size();
    const size_t c = content->get_ref<const std::string&>().size();
    if (c == 0) return 0;
    return std::max<size_t>(1, (p + c - 1) / c);
  }
  if (type == "Sequence") {
    auto list = n.find("normalizers");
    if (list == n.end() || !list->is_array()) return 0;
    size_t factor = 1;
    for (const json& part : *list) factor = times(factor, normalizer_shrink(part));
    return factor;
  }
  return 0;  // Strip deletes whitespace runs; unknown types prove nothing
}

bool pre_tokenizer_keeps_text(const json& p) {
  if (p.is_null()) return true;
  const std::string type = type_of(p);
  if (type == "ByteLevel" || type == "Metaspace" || type == "Digits") return true;
  if (type == "Split") {
    auto behavior = p.find("behavior");
    return behavior != p.end() && behavior->is_string() && behavior->get<std::string>() != "Removed";
  }
  if (type == "Sequence") {
    auto list = p.find("pretokenizers");
    if (list == p.end() || !list->is_array()) return false;
    return std::all_of(list->begin(), list->end(), [](const json& part) { return pre_tokenizer_keeps_text(part); });
  }
  return false;  // WhitespaceSplit drops whitespace; unknown types prove nothing
}

bool maps_to_byte_alphabet(const json& stage) {
  if (stage.is_null()) return false;
  if (type_of(stage) == "ByteLevel") return true;
  for (const char* key : {"normalizers", "pretokenizers"}) {
    auto list = stage.find(key);
    if (list != stage.end() && list->is_array())
      for (const json& part : *list)
        if (maps_to_byte_alphabet(part)) return true;
  }
  return false;
}

size_t count_non_space_bytes(std::string_view text) {
  size_t n = 0;
  for (char c : text) n += static_cast<unsigned char>(c) > 0x20 && c != 0x7f;
  return n;
}

size_t added_tokens_bound(const std::vector<AddedToken>& tokens) {
  size_t longest = 1;
  for (const AddedToken& t : tokens) {
    if (t.lstrip || t.rstrip) return 0;
    longest = std::max({longest, t.content.size(), t.normalized_content.size()});
  }
  return longest;
}

}  // namespace seam::text_bound
