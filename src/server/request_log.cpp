#include "server/request_log.h"

#include <nlohmann/json.hpp>

#include "core/log.h"

namespace seam {

namespace {

constexpr size_t k_partial_prompt_bytes = 2048;  // --log-requests-level 2, as sglang's partial logging

std::string json_quoted(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string sampling_text(const SamplingParams& p) {
  nlohmann::json j;
  j["max_new_tokens"] = p.max_new_tokens;
  j["temperature"] = p.temperature;
  j["top_p"] = p.top_p;
  j["top_k"] = p.top_k;
  j["min_p"] = p.min_p;
  j["frequency_penalty"] = p.frequency_penalty;
  j["presence_penalty"] = p.presence_penalty;
  j["repetition_penalty"] = p.repetition_penalty;
  if (p.seed) j["seed"] = *p.seed;
  j["stop"] = p.stop;
  j["stop_token_ids"] = p.stop_token_ids;
  j["ignore_eos"] = p.ignore_eos;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

void log_request_accepted(const std::string& request_id, const char* kind, const std::vector<std::string>& prompts,
                          const std::vector<std::vector<int32_t>>& prompt_ids, int n, const SamplingParams& params) {
  const int level = log::request_log_level();
  if (level < 0) return;
  // Appended piece by piece: `"," + std::to_string(...)` inserts a C string in front of a
  // temporary, which GCC 12's -Wrestrict reads as a memcpy that may overlap (a false positive,
  // but the appends are also one copy fewer).
  std::string counts;
  for (size_t i = 0; i < prompt_ids.size(); ++i) {
    if (i) counts += ',';
    counts += std::to_string(prompt_ids[i].size());
  }
  std::string extra;
  if (level >= 1) extra.append(" sampling=").append(sampling_text(params));
  if (level >= 2) {
    for (size_t i = 0; i < prompts.size(); ++i) {
      std::string text = prompts[i];
      if (level == 2 && text.size() > k_partial_prompt_bytes)
        text.resize(k_partial_prompt_bytes);  // replace fixes a cut char
      extra.append(" prompt[").append(std::to_string(i)).append("]=").append(json_quoted(text));
    }
  }
  log::info("request %s accepted: %s, %zu prompt(s) x n=%d, prompt_tokens=[%s]%s", request_id.c_str(), kind,
            prompt_ids.size(), n, counts.c_str(), extra.c_str());
}

void log_request_finished(const std::string& request_id, int choice, const RequestOutput& out) {
  if (log::request_log_level() < 0) return;
  log::info(
      "request %s choice %d finished: %s, prompt_tokens=%d cached_tokens=%d output_tokens=%d queue=%.4fs "
      "ttft=%.4fs e2e=%.4fs%s%s",
      request_id.c_str(), choice, finish_reason_name(out.finish_reason), out.n_prompt_tokens, out.n_cached_tokens,
      out.n_output_tokens, out.queue_time_s, out.ttft_s, out.e2e_s,
      out.error.empty() ? "" : " error=", out.error.empty() ? "" : json_quoted(out.error).c_str());
}

}  // namespace seam
