#include "cli/request_json.h"

#include "core/error.h"

namespace seam::cli {

namespace {
template <typename T>
void read(const nlohmann::json& j, const char* key, T& out, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  try {
    out = it->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(where + ": field '" + key + "' has the wrong type (" + it->type_name() + ")");
  }
}
}  // namespace

void read_sampling_fields(const nlohmann::json& j, SamplingParams& p, const std::string& where) {
  read(j, "max_new_tokens", p.max_new_tokens, where);
  read(j, "temperature", p.temperature, where);
  read(j, "top_p", p.top_p, where);
  read(j, "top_k", p.top_k, where);
  read(j, "min_p", p.min_p, where);
  read(j, "frequency_penalty", p.frequency_penalty, where);
  read(j, "presence_penalty", p.presence_penalty, where);
  read(j, "repetition_penalty", p.repetition_penalty, where);
  read(j, "ignore_eos", p.ignore_eos, where);
  read(j, "stop_token_ids", p.stop_token_ids, where);
  read(j, "skip_special_tokens", p.skip_special_tokens, where);
  if (j.contains("seed") && !j["seed"].is_null()) {
    uint64_t seed = 0;
    read(j, "seed", seed, where);
    p.seed = seed;
  }
  if (j.contains("stop") && !j["stop"].is_null()) {
    if (j["stop"].is_string()) {
      p.stop = {j["stop"].get<std::string>()};
    } else {
      read(j, "stop", p.stop, where);
    }
  }
}

RequestSpec parse_request_line(const std::string& line, const SamplingParams& defaults, const std::string& where) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(where + ": malformed JSON: " + e.what());
  }
  SEAM_CHECK(j.is_object(), where, ": expected a JSON object");
  RequestSpec s;
  s.params = defaults;
  if (j.contains("input_ids")) {
    read(j, "input_ids", s.input_ids, where);
    s.has_ids = true;
  } else {
    SEAM_CHECK(j.contains("prompt") && j["prompt"].is_string(), where, ": needs a string 'prompt' or 'input_ids'");
    s.prompt = j["prompt"].get<std::string>();
  }
  read_sampling_fields(j, s.params, where);
  return s;
}

}  // namespace seam::cli
