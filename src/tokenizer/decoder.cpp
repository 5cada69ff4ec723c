#include "tokenizer/decoder.h"

#include "tokenizer/byte_level.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

namespace seam {

namespace {

using json_fields::json;

// ByteLevel: every token's characters back to bytes (a token with a character
// outside the map keeps its own UTF-8), then the whole as lossy UTF-8.
class ByteLevelDecoder : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    std::string mapped;
    for (const std::string& t : tokens) {
      mapped.clear();
      bool ok = true;
      for (size_t pos = 0; pos < t.size();) {
        size_t n;
        const int b = byte_level::char_to_byte(utf8::decode_at(t, pos, &n));
        if (b < 0) {
          ok = false;
          break;
        }
        mapped.push_back(static_cast<char>(b));
        pos += n;
      }
      bytes += ok ? mapped : t;
    }
    tokens.assign(1, utf8::to_valid_lossy(bytes));
  }
};

enum class PrependScheme { kAlways, kNever, kFirst };

// Metaspace: the replacement character becomes a space, except that the first
// token loses it altogether unless the scheme is "never".
class MetaspaceDecoder : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool drop_first)
      : replacement_(std::move(replacement)), drop_first_(drop_first) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      std::string out;
      out.reserve(t.size());
      for (size_t pos = 0; pos < t.size();) {
        if (t.compare(pos, replacement_.size(), replacement_) == 0) {
          if (!(i == 0 && drop_first_)) out += ' ';
          pos += replacement_.size();
        } else {
          out += t[pos++];
        }
      }
      t = std::move(out);
    }
  }

 private:
  std::string replacement_;
  bool drop_first_;
};

// ByteFallback: runs of <0xXX> tokens become their bytes when those form valid
// UTF-8, else one U+FFFD per byte token.
class ByteFallbackDecoder : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    out.reserve(tokens.size());
    std::string bytes;
    size_t n_bytes = 0;
    auto flush = [&]() {
      if (n_bytes == 0) return;
      if (utf8::find_invalid(bytes) == std::string::npos) {
        out.push_back(bytes);
      } else {
        for (size_t i = 0; i < n_bytes; ++i) out.emplace_back(utf8::kReplacementChar);
      }
      bytes.clear();
      n_bytes = 0;
    };
    for (std::string& t : tokens) {
      int value = -1;
      if (t.size() == 6 && t.starts_with("<0x") && t[5] == '>') value = parse_hex(t[3], t[4]);
      if (value >= 0) {
        bytes.push_back(static_cast<char>(value));
        ++n_bytes;
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens = std::move(out);
  }

 private:
  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  static int parse_hex(char hi, char lo) {
    const int h = hex(hi), l = hex(lo);
    return h < 0 || l < 0 ? -1 : h * 16 + l;
  }
};

class FuseDecoder : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const std::string& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

// Strip: removes up to `start` leading and `stop` trailing copies of `content`.
class StripDecoder : public Decoder {
 public:
  StripDecoder(std::string content, size_t start, size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) {
      size_t begin = 0, end = t.size();
      for (size_t i = 0; i < start_ && end - begin >= content_.size() &&
                         t.compare(begin, content_.size(), content_) == 0;
           ++i)
        begin += content_.size();
      for (size_t i = 0; i < stop_ && end - begin >= content_.size() &&
                         t.compare(end - content_.size(), content_.size(), content_) == 0;
           ++i)
        end -= content_.size();
      t = t.substr(begin, end - begin);
    }
  }

 private:
  std::string content_;
  size_t start_, stop_;
};

class ReplaceDecoder : public Decoder {
 public:
  ReplaceDecoder(const std::string& pattern, std::string content, const std::string& where)
      : regex_(pattern, where), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::pair<size_t, size_t>> matches;
    for (std::string& t : tokens) {
      matches.clear();
      regex_.find_all(t, matches);
      if (matches.empty()) continue;
      std::string out;
      size_t prev = 0;
      for (auto [b, e] : matches) {
        out.append(t, prev, b - prev);
        out += content_;
        prev = e;
      }
      out.append(t, prev);
      t = std::move(out);
    }
  }

 private:
  Regex regex_;
  std::string content_;
};

// BPEDecoder: the end-of-word suffix becomes a space (nothing on the last token).
class BpeSuffixDecoder : public Decoder {
 public:
  explicit BpeSuffixDecoder(std::string suffix) : suffix_(std::move(suffix)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    if (suffix_.empty()) return;
    for (size_t i = 0; i < tokens.size(); ++i) {
      const std::string with = i + 1 == tokens.size() ? "" : " ";
      std::string& t = tokens[i];
      std::string out;
      for (size_t pos = 0; pos < t.size();) {
        if (t.compare(pos, suffix_.size(), suffix_) == 0) {
          out += with;
          pos += suffix_.size();
        } else {
          out += t[pos++];
        }
      }
      t = std::move(out);
    }
  }

 private:
  std::string suffix_;
};

class SequenceDecoder : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> parts) : parts_(std::move(parts)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& p : parts_) p->decode_chain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

}  // namespace

std::unique_ptr<Decoder> make_decoder(const json& config, const std::string& where) {
  const std::string type = json_fields::require_string(config, "type", where);
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "Metaspace") {
    const std::string replacement = json_fields::require_string(config, "replacement", where);
    SEAM_CHECK(!replacement.empty(), where, ".replacement: must be one character");
    bool drop_first = true;
    if (config.contains("prepend_scheme")) {
      const std::string name = json_fields::require_string(config, "prepend_scheme", where);
      SEAM_CHECK(name == "always" || name == "never" || name == "first", where,
                 ".prepend_scheme: unknown value '", name, "' (always, never, first)");
      drop_first = name != "never";
    } else {
      drop_first = json_fields::optional_bool(config, "add_prefix_space", true, where);
    }
    return std::make_unique<MetaspaceDecoder>(replacement, drop_first);
  }
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") {
    const std::string content = json_fields::require_string(config, "content", where);
    const int64_t start = json_fields::optional_int(config, "start", 0, where);
    const int64_t stop = json_fields::optional_int(config, "stop", 0, where);
    SEAM_CHECK(start >= 0 && stop >= 0, where, ": start and stop must not be negative");
    return std::make_unique<StripDecoder>(content, static_cast<size_t>(start), static_cast<size_t>(stop));
  }
  if (type == "Replace") {
    return std::make_unique<ReplaceDecoder>(
        json_fields::pattern_source(json_fields::require(config, "pattern", where), where),
        json_fields::require_string(config, "content", where), where);
  }
  if (type == "BPEDecoder") {
    return std::make_unique<BpeSuffixDecoder>(json_fields::optional_string(config, "suffix", "</w>", where));
  }
  if (type == "Sequence") {
    const json& list = json_fields::require_array(config, "decoders", where);
    std::vector<std::unique_ptr<Decoder>> parts;
    for (size_t i = 0; i < list.size(); ++i)
      parts.push_back(make_decoder(list[i], where + ".decoders[" + std::to_string(i) + "]"));
    return std::make_unique<SequenceDecoder>(std::move(parts));
  }
  throw Error(where + ": unsupported decoder type '" + type +
              "' (supported: ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace, BPEDecoder, Sequence)");
}

}  // namespace seam
