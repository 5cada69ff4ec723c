#include "tokenizer/post_processor.h"

#include "tokenizer/json_fields.h"

namespace seam {

namespace {

using json_fields::json;

// Wraps the sequence: prefix + ids + suffix.
class WrapProcessor : public PostProcessor {
 public:
  WrapProcessor(std::vector<int32_t> prefix, std::vector<int32_t> suffix)
      : prefix_(std::move(prefix)), suffix_(std::move(suffix)) {}
  void process(std::vector<int32_t>& ids) const override {
    ids.insert(ids.begin(), prefix_.begin(), prefix_.end());
    ids.insert(ids.end(), suffix_.begin(), suffix_.end());
  }
  std::vector<int32_t> prefix_ids() const override { return prefix_; }

 private:
  std::vector<int32_t> prefix_, suffix_;
};

class SequenceProcessor : public PostProcessor {
 public:
  explicit SequenceProcessor(std::vector<std::unique_ptr<PostProcessor>> parts) : parts_(std::move(parts)) {}
  void process(std::vector<int32_t>& ids) const override {
    for (const auto& p : parts_) p->process(ids);
  }
  std::vector<int32_t> prefix_ids() const override {
    std::vector<int32_t> out;
    for (auto it = parts_.rbegin(); it != parts_.rend(); ++it) {
      auto p = (*it)->prefix_ids();
      out.insert(out.begin(), p.begin(), p.end());
    }
    return out;
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

// TemplateProcessing's "single" template: [{"SpecialToken": {"id": name}},
// {"Sequence": {"id": "A"}}, ...]; each name's ids come from "special_tokens".
std::unique_ptr<PostProcessor> make_template(const json& config, const std::string& where) {
  const json& single = json_fields::require_array(config, "single", where);
  const json& specials = json_fields::require(config, "special_tokens", where);
  SEAM_CHECK(specials.is_object(), where, ".special_tokens: expected an object");
  std::vector<int32_t> prefix, suffix;
  bool seen_sequence = false;
  for (size_t i = 0; i < single.size(); ++i) {
    const std::string at = where + ".single[" + std::to_string(i) + "]";
    const json& piece = single[i];
    SEAM_CHECK(piece.is_object(), at, ": expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
    if (piece.contains("Sequence")) {
      const std::string id = json_fields::require_string(piece["Sequence"], "id", at + ".Sequence");
      SEAM_CHECK(id == "A", at, ": a single-sequence template can only hold sequence A, got ", id);
      SEAM_CHECK(!seen_sequence, at, ": sequence A appears twice");
      seen_sequence = true;
      continue;
    }
    SEAM_CHECK(piece.contains("SpecialToken"), at, ": expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
    const std::string name = json_fields::require_string(piece["SpecialToken"], "id", at + ".SpecialToken");
    auto it = specials.find(name);
    SEAM_CHECK(it != specials.end(), at, ": special token \"", name, "\" is not in special_tokens");
    const json& ids = json_fields::require_array(*it, "ids", where + ".special_tokens[\"" + name + "\"]");
    for (const json& id : ids) {
      SEAM_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0, where, ".special_tokens[\"", name,
                 "\"].ids: expected non-negative integers");
      (seen_sequence ? suffix : prefix).push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
  }
  SEAM_CHECK(seen_sequence, where, ".single: the template has no {\"Sequence\": {\"id\": \"A\"}}");
  return std::make_unique<WrapProcessor>(std::move(prefix), std::move(suffix));
}

// BertProcessing / RobertaProcessing: "cls": [token, id], "sep": [token, id].
int32_t pair_id(const json& config, const char* key, const std::string& where) {
  const json& v = json_fields::require(config, key, where);
  SEAM_CHECK(v.is_array() && v.size() == 2 && v[1].is_number_integer() && v[1].get<int64_t>() >= 0, where, ".",
             key, ": expected [token, id]");
  return static_cast<int32_t>(v[1].get<int64_t>());
}

}  // namespace

std::unique_ptr<PostProcessor> make_post_processor(const json& config, const std::string& where) {
  const std::string type = json_fields::require_string(config, "type", where);
  if (type == "TemplateProcessing") return make_template(config, where);
  if (type == "ByteLevel") return std::make_unique<WrapProcessor>(std::vector<int32_t>{}, std::vector<int32_t>{});
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    return std::make_unique<WrapProcessor>(std::vector<int32_t>{pair_id(config, "cls", where)},
                                           std::vector<int32_t>{pair_id(config, "sep", where)});
  }
  if (type == "Sequence") {
    const json& list = json_fields::require_array(config, "processors", where);
    std::vector<std::unique_ptr<PostProcessor>> parts;
    for (size_t i = 0; i < list.size(); ++i)
      parts.push_back(make_post_processor(list[i], where + ".processors[" + std::to_string(i) + "]"));
    return std::make_unique<SequenceProcessor>(std::move(parts));
  }
  throw Error(where + ": unsupported post_processor type '" + type +
              "' (supported: TemplateProcessing, ByteLevel, BertProcessing, RobertaProcessing, Sequence)");
}

}  // namespace seam
