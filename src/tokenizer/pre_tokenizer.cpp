#include "tokenizer/pre_tokenizer.h"


#include "tokenizer/byte_level.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/regex.h"

namespace seam {

namespace {

using json_fields::json;

// GPT-2's pattern, used by ByteLevel when use_regex is set.
constexpr const char* kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

Behavior parse_behavior(const std::string& name, const std::string& where) {
  if (name == "Removed") return Behavior::kRemoved;
  if (name == "Isolated") return Behavior::kIsolated;
  if (name == "MergedWithPrevious") return Behavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return Behavior::kMergedWithNext;
  if (name == "Contiguous") return Behavior::kContiguous;
  throw Error(where + ".behavior: unknown split behaviour '" + name + "'");
}

struct Part {
  size_t begin, end;
  bool is_match;
};

// Cuts `piece` at the regex matches, following HF's SplitDelimiterBehavior,
// and appends the non-empty results to `out`.
void split_piece(const PreToken& piece, const Regex& regex, Behavior behavior, bool invert,
                 std::vector<PreToken>& out, std::vector<std::pair<size_t, size_t>>& scratch) {
  const std::string& s = piece.text;
  scratch.clear();
  regex.find_all(s, scratch);
  std::vector<Part> parts;
  parts.reserve(scratch.size() * 2 + 1);
  size_t prev = 0;
  for (auto [b, e] : scratch) {
    if (prev != b) parts.push_back({prev, b, invert});
    parts.push_back({b, e, !invert});
    prev = e;
  }
  if (prev != s.size()) parts.push_back({prev, s.size(), invert});

  std::vector<Part> merged;
  merged.reserve(parts.size());
  switch (behavior) {
    case Behavior::kRemoved:
      for (const Part& p : parts)
        if (!p.is_match) merged.push_back(p);
      break;
    case Behavior::kIsolated:
      merged = parts;
      break;
    case Behavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const Part& p : parts) {
        if (p.is_match && !previous_match && !merged.empty()) {
          merged.back().end = p.end;
        } else {
          merged.push_back(p);
        }
        previous_match = p.is_match;
      }
      break;
    }
    case Behavior::kMergedWithNext: {
      // Built back to front (as HF folds the reversed list); read back in reverse below.
      bool previous_match = false;
      for (size_t i = parts.size(); i-- > 0;) {
        const Part& p = parts[i];
        if (p.is_match && !previous_match && !merged.empty()) {
          merged.back().begin = p.begin;
        } else {
          merged.push_back(p);
        }
        previous_match = p.is_match;
      }
      for (size_t i = merged.size(); i-- > 0;) {
        const Part& p = merged[i];
        if (p.end > p.begin) out.push_back({s.substr(p.begin, p.end - p.begin), piece.at_text_start && p.begin == 0});
      }
      return;
    }
    case Behavior::kContiguous: {
      bool previous_match = false;
      for (const Part& p : parts) {
        if (p.is_match == previous_match && !merged.empty()) {
          merged.back().end = p.end;
        } else {
          merged.push_back(p);
        }
        previous_match = p.is_match;
      }
      break;
    }
  }
  for (const Part& p : merged) {
    if (p.end == p.begin) continue;
    out.push_back({s.substr(p.begin, p.end - p.begin), piece.at_text_start && p.begin == 0});
  }
}

class SplitPreTokenizer : public PreTokenizer {
 public:
  SplitPreTokenizer(const std::string& pattern, Behavior behavior, bool invert, const std::string& where)
      : regex_(pattern, where), behavior_(behavior), invert_(invert) {}

  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    std::vector<PreToken> out;
    out.reserve(pieces.size() * 4);
    std::vector<std::pair<size_t, size_t>> scratch;
    for (const PreToken& p : pieces) split_piece(p, regex_, behavior_, invert_, out, scratch);
    pieces = std::move(out);
  }

 private:
  Regex regex_;
  Behavior behavior_;
  bool invert_;
};

class ByteLevelPreTokenizer : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space) {
    if (use_regex) regex_ = std::make_unique<Regex>(kGpt2Pattern, "ByteLevel pre-tokenizer");
  }

  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    if (add_prefix_space_) {
      for (PreToken& p : pieces)
        if (!p.text.empty() && p.text[0] != ' ') p.text.insert(0, 1, ' ');
    }
    if (regex_) {
      std::vector<PreToken> out;
      out.reserve(pieces.size() * 4);
      std::vector<std::pair<size_t, size_t>> scratch;
      for (const PreToken& p : pieces) split_piece(p, *regex_, Behavior::kIsolated, false, out, scratch);
      pieces = std::move(out);
    }
    for (PreToken& p : pieces) p.text = byte_level::encode(p.text);
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Regex> regex_;
};

enum class PrependScheme { kAlways, kNever, kFirst };

class MetaspacePreTokenizer : public PreTokenizer {
 public:
  MetaspacePreTokenizer(std::string replacement, PrependScheme scheme, bool split)
      : replacement_(std::move(replacement)),
        scheme_(scheme),
        split_(split),
        regex_(Regex::escape(replacement_), "Metaspace pre-tokenizer") {}

  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    std::vector<PreToken> out;
    std::vector<std::pair<size_t, size_t>> scratch;
    for (PreToken& p : pieces) {
      std::string s;
      s.reserve(p.text.size() + 3);
      for (char c : p.text) {
        if (c == ' ') {
          s += replacement_;
        } else {
          s += c;
        }
      }
      const bool starts = s.compare(0, replacement_.size(), replacement_) == 0;
      if (!starts && !s.empty() && (scheme_ == PrependScheme::kAlways ||
                      (scheme_ == PrependScheme::kFirst && p.at_text_start))) {
        s.insert(0, replacement_);
      }
      PreToken rewritten{std::move(s), p.at_text_start};
      if (split_) {
        split_piece(rewritten, regex_, Behavior::kMergedWithNext, false, out, scratch);
      } else if (!rewritten.text.empty()) {
        out.push_back(std::move(rewritten));
      }
    }
    pieces = std::move(out);
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
  Regex regex_;
};

class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    for (const auto& p : parts_) p->pre_tokenize(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& config, const std::string& where) {
  const std::string type = json_fields::require_string(config, "type", where);
  if (type == "Split") {
    const std::string pattern = json_fields::pattern_source(json_fields::require(config, "pattern", where), where);
    const Behavior behavior = parse_behavior(json_fields::require_string(config, "behavior", where), where);
    return std::make_unique<SplitPreTokenizer>(pattern, behavior,
                                               json_fields::optional_bool(config, "invert", false, where), where);
  }
  if (type == "ByteLevel") {
    return std::make_unique<ByteLevelPreTokenizer>(
        json_fields::optional_bool(config, "add_prefix_space", true, where),
        json_fields::optional_bool(config, "use_regex", true, where));
  }
  if (type == "Metaspace") {
    const std::string replacement = json_fields::require_string(config, "replacement", where);
    SEAM_CHECK(!replacement.empty(), where, ".replacement: must be one character");
    PrependScheme scheme = PrependScheme::kAlways;
    if (config.contains("prepend_scheme")) {
      const std::string name = json_fields::require_string(config, "prepend_scheme", where);
      if (name == "always") {
        scheme = PrependScheme::kAlways;
      } else if (name == "never") {
        scheme = PrependScheme::kNever;
      } else if (name == "first") {
        scheme = PrependScheme::kFirst;
      } else {
        throw Error(where + ".prepend_scheme: unknown value '" + name + "' (always, never, first)");
      }
    } else {
      scheme = json_fields::optional_bool(config, "add_prefix_space", true, where) ? PrependScheme::kAlways
                                                                                  : PrependScheme::kNever;
    }
    return std::make_unique<MetaspacePreTokenizer>(replacement, scheme,
                                                   json_fields::optional_bool(config, "split", true, where));
  }
  if (type == "Digits") {
    const bool individual = json_fields::optional_bool(config, "individual_digits", false, where);
    return std::make_unique<SplitPreTokenizer>("\\p{N}", individual ? Behavior::kIsolated : Behavior::kContiguous,
                                               false, where);
  }
  if (type == "WhitespaceSplit") {
    return std::make_unique<SplitPreTokenizer>("\\s", Behavior::kRemoved, false, where);
  }
  if (type == "Sequence") {
    const json& list = json_fields::require_array(config, "pretokenizers", where);
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    for (size_t i = 0; i < list.size(); ++i)
      parts.push_back(make_pre_tokenizer(list[i], where + ".pretokenizers[" + std::to_string(i) + "]"));
    return std::make_unique<SequencePreTokenizer>(std::move(parts));
  }
  throw Error(where + ": unsupported pre_tokenizer type '" + type +
              "' (supported: Split, ByteLevel, Metaspace, Digits, WhitespaceSplit, Sequence)");
}

}  // namespace seam
