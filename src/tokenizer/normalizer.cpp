#include "tokenizer/normalizer.h"

#include <vector>

#include "tokenizer/byte_level.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/regex.h"
#include "tokenizer/unicode_normalization.h"
#include "tokenizer/utf8.h"

namespace seam {

namespace {

using json_fields::json;

class NfcNormalizer : public Normalizer {
 public:
  void normalize(std::string& s) const override { s = unicode::nfc(s); }
};

class NfdNormalizer : public Normalizer {
 public:
  void normalize(std::string& s) const override { s = unicode::nfd(s); }
};

// Prepend / Append: only to a non-empty string (HF skips empty pieces).
class AffixNormalizer : public Normalizer {
 public:
  AffixNormalizer(std::string affix, bool prepend) : affix_(std::move(affix)), prepend_(prepend) {}
  void normalize(std::string& s) const override {
    if (s.empty()) return;
    s = prepend_ ? affix_ + s : s + affix_;
  }

 private:
  std::string affix_;
  bool prepend_;
};

class ReplaceNormalizer : public Normalizer {
 public:
  ReplaceNormalizer(const std::string& pattern, std::string content, const std::string& where)
      : regex_(pattern, where), content_(std::move(content)) {}
  void normalize(std::string& s) const override {
    std::vector<std::pair<size_t, size_t>> matches;
    regex_.find_all(s, matches);
    if (matches.empty()) return;
    std::string out;
    size_t prev = 0;
    for (auto [b, e] : matches) {
      out.append(s, prev, b - prev);
      out += content_;
      prev = e;
    }
    out.append(s, prev);
    s = std::move(out);
  }

 private:
  Regex regex_;
  std::string content_;
};

// Strip: removes Unicode whitespace on the left and/or right.
class StripNormalizer : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string& s) const override {
    size_t begin = 0, end = s.size();
    while (left_ && begin < end) {
      size_t n;
      if (!is_white_space(utf8::decode_at(s, begin, &n))) break;
      begin += n;
    }
    while (right_ && end > begin) {
      size_t start = end - 1;
      while (start > begin && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
      size_t n;
      if (!is_white_space(utf8::decode_at(s, start, &n))) break;
      end = start;
    }
    s = s.substr(begin, end - begin);
  }

 private:
  bool left_, right_;
};

class ByteLevelNormalizer : public Normalizer {
 public:
  void normalize(std::string& s) const override { s = byte_level::encode(s); }
};

class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
  void normalize(std::string& s) const override {
    for (const auto& p : parts_) p->normalize(s);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const json& config, const std::string& where) {
  const std::string type = json_fields::require_string(config, "type", where);
  if (type == "NFC") return std::make_unique<NfcNormalizer>();
  if (type == "NFD") return std::make_unique<NfdNormalizer>();
  if (type == "Prepend")
    return std::make_unique<AffixNormalizer>(json_fields::require_string(config, "prepend", where), true);
  if (type == "Append")
    return std::make_unique<AffixNormalizer>(json_fields::require_string(config, "append", where), false);
  if (type == "Replace") {
    return std::make_unique<ReplaceNormalizer>(
        json_fields::pattern_source(json_fields::require(config, "pattern", where), where),
        json_fields::require_string(config, "content", where), where);
  }
  if (type == "Strip") {
    return std::make_unique<StripNormalizer>(json_fields::optional_bool(config, "strip_left", true, where),
                                             json_fields::optional_bool(config, "strip_right", true, where));
  }
  if (type == "ByteLevel") return std::make_unique<ByteLevelNormalizer>();
  if (type == "Sequence") {
    const json& list = json_fields::require_array(config, "normalizers", where);
    std::vector<std::unique_ptr<Normalizer>> parts;
    for (size_t i = 0; i < list.size(); ++i)
      parts.push_back(make_normalizer(list[i], where + ".normalizers[" + std::to_string(i) + "]"));
    return std::make_unique<SequenceNormalizer>(std::move(parts));
  }
  throw Error(where + ": unsupported normalizer type '" + type +
              "' (supported: NFC, NFD, Prepend, Append, Replace, Strip, ByteLevel, Sequence)");
}

}  // namespace seam
