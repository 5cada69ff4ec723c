#include "server/logprobs_json.h"

#include <cmath>

namespace seam {

using json = nlohmann::json;

json logprob_value(float lp) {
  if (std::isnan(lp)) return nullptr;
  if (!std::isfinite(lp)) return -9999.0;
  return lp;
}

namespace {
json utf8_bytes(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(int(c));
  return b;
}
}  // namespace

std::string LogprobsJson::token_text(int32_t id) const {
  // Decoded alone, a SentencePiece word-start token loses its space; decoded after the
  // previous token, its text is what it adds.
  if (prev_id_ < 0) return tok_.decode({id}, false);
  const std::string before = tok_.decode({prev_id_}, false);
  const std::string both = tok_.decode({prev_id_, id}, false);
  if (both.compare(0, before.size(), before) == 0) return both.substr(before.size());
  return tok_.decode({id}, false);
}

void LogprobsJson::append_chat(const std::vector<TokenLogprob>& lps, json& content) {
  if (!content.is_array()) content = json::array();
  for (const TokenLogprob& t : lps) {
    const std::string text = token_text(t.id);
    json top = json::array();
    for (const auto& [id, lp] : t.top) {
      const std::string alt = token_text(id);
      top.push_back({{"token", alt}, {"logprob", logprob_value(lp)}, {"bytes", utf8_bytes(alt)}});
    }
    content.push_back(
        {{"token", text}, {"logprob", logprob_value(t.logprob)}, {"bytes", utf8_bytes(text)}, {"top_logprobs", top}});
    prev_id_ = t.id;
  }
}

void LogprobsJson::append_completion(const std::vector<TokenLogprob>& lps, json& obj) {
  if (!obj.is_object())
    obj = {{"tokens", json::array()}, {"token_logprobs", json::array()}, {"top_logprobs", json::array()},
           {"text_offset", json::array()}};
  for (const TokenLogprob& t : lps) {
    const std::string text = token_text(t.id);
    obj["tokens"].push_back(text);
    obj["text_offset"].push_back(text_offset_);
    const json lp = logprob_value(t.logprob);
    obj["token_logprobs"].push_back(lp);
    if (lp.is_null()) {
      obj["top_logprobs"].push_back(nullptr);
    } else {
      json top = json::object();
      for (const auto& [id, alt_lp] : t.top) top[token_text(id)] = logprob_value(alt_lp);
      if (!top.contains(text)) top[text] = lp;  // the chosen token is always reported (vLLM)
      obj["top_logprobs"].push_back(std::move(top));
    }
    text_offset_ += text.size();
    prev_id_ = t.id;
  }
}

}  // namespace seam
