#include "tokenizer/pre_tokenizer.h"

#include <vector>

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

// Cuts `text` at the regex matches following HF's SplitDelimiterBehavior and
// hands the non-empty results to `sink`. Isolated and Removed stream; the
// merging behaviours fold the list of parts as HF does.
void split_text(std::string_view text, bool at_text_start, const Regex& regex, Behavior behavior, bool invert,
                const PreTokenizer::Sink& sink) {
  auto emit = [&](size_t begin, size_t end) {
    if (end > begin) sink(text.substr(begin, end - begin), at_text_start && begin == 0);
  };
  if (behavior == Behavior::kIsolated || (behavior == Behavior::kRemoved && !invert)) {
    size_t prev = 0;
    const bool keep_matches = behavior == Behavior::kIsolated;
    regex.for_each_match(text, [&](size_t b, size_t e) {
      emit(prev, b);
      if (keep_matches) emit(b, e);
      prev = e;
    });
    emit(prev, text.size());
    return;
  }
  std::vector<Part> parts;
  size_t prev = 0;
  regex.for_each_match(text, [&](size_t b, size_t e) {
    if (prev != b) parts.push_back({prev, b, invert});
    parts.push_back({b, e, !invert});
    prev = e;
  });
  if (prev != text.size()) parts.push_back({prev, text.size(), invert});

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
      // Built back to front (as HF folds the reversed list), emitted in reverse.
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
      for (size_t i = merged.size(); i-- > 0;) emit(merged[i].begin, merged[i].end);
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
  for (const Part& p : merged) emit(p.begin, p.end);
}

class SplitPreTokenizer : public PreTokenizer {
 public:
  SplitPreTokenizer(const std::string& pattern, Behavior behavior, bool invert, const std::string& where)
      : regex_(pattern, where), behavior_(behavior), invert_(invert) {}

  void pre_tokenize(std::string_view text, bool at_text_start, const Sink& sink) const override {
    split_text(text, at_text_start, regex_, behavior_, invert_, sink);
  }

 private:
  Regex regex_;
  Behavior behavior_;
  bool invert_;
};

// ByteLevel: optional prefix space, optional GPT-2 regex split, then every
// byte of each piece becomes its printable character.
class ByteLevelPreTokenizer : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex) : add_prefix_space_(add_prefix_space) {
    if (use_regex) regex_ = std::make_unique<Regex>(kGpt2Pattern, "ByteLevel pre-tokenizer");
  }

  void pre_tokenize(std::string_view text, bool at_text_start, const Sink& sink) const override {
    if (text.empty()) return;
    std::string prefixed;
    if (add_prefix_space_ && text[0] != ' ') {
      prefixed.reserve(text.size() + 1);
      prefixed += ' ';
      prefixed += text;
      text = prefixed;
    }
    std::string mapped;  // short pieces stay in the small-string buffer
    auto map_and_emit = [&](std::string_view piece, bool start) {
      mapped.clear();
      byte_level::encode_append(piece, mapped);
      sink(mapped, start);
    };
    if (regex_) {
      split_text(text, at_text_start, *regex_, Behavior::kIsolated, false, map_and_emit);
    } else {
      map_and_emit(text, at_text_start);
    }
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

  void pre_tokenize(std::string_view text, bool at_text_start, const Sink& sink) const override {
    if (text.empty()) return;
    std::string s;
    s.reserve(text.size() + 3);
    for (char c : text) {
      if (c == ' ') {
        s += replacement_;
      } else {
        s += c;
      }
    }
    const bool starts = s.compare(0, replacement_.size(), replacement_) == 0;
    if (!starts && (scheme_ == PrependScheme::kAlways || (scheme_ == PrependScheme::kFirst && at_text_start)))
      s.insert(0, replacement_);
    if (split_) {
      split_text(s, at_text_start, regex_, Behavior::kMergedWithNext, false, sink);
    } else {
      sink(s, at_text_start);
    }
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
  void pre_tokenize(std::string_view text, bool at_text_start, const Sink& sink) const override {
    run(0, text, at_text_start, sink);
  }

 private:
  void run(size_t i, std::string_view text, bool at_text_start, const Sink& sink) const {
    if (i == parts_.size()) {
      sink(text, at_text_start);
      return;
    }
    parts_[i]->pre_tokenize(text, at_text_start,
                            [&](std::string_view piece, bool start) { run(i + 1, piece, start, sink); });
  }

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
