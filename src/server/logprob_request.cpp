#include "server/logprob_request.h"

#include <cmath>
#include <limits>
#include <string>

#include "server/api_error.h"

namespace seam {

namespace {

using json = nlohmann::json;

const json* find(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

int read_count(const json& v, const char* key) {
  if (!v.is_number_integer()) throw bad_request(std::string("'") + key + "' must be an integer", key);
  const bool negative = v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0;
  if (negative || v.get<uint64_t>() > uint64_t(kMaxTopLogprobs))
    throw bad_request(std::string("'") + key + "' must be in [0, " + std::to_string(kMaxTopLogprobs) + "], got " +
                          v.dump(),
                      key);
  return int(v.get<int64_t>());
}

// {"token id": bias}: ids as decimal strings (JSON keys), biases numbers in [-100, 100].
// The vocabulary bound is the engine's check (SamplingParams::validate).
std::vector<std::pair<int32_t, float>> read_logit_bias(const json& v) {
  if (!v.is_object()) throw bad_request("'logit_bias' must be an object mapping token ids to biases", "logit_bias");
  if (v.size() > size_t(kMaxLogitBias))
    throw bad_request("'logit_bias' has " + std::to_string(v.size()) + " entries, at most " +
                          std::to_string(kMaxLogitBias) + " are allowed",
                      "logit_bias");
  std::vector<std::pair<int32_t, float>> out;
  for (const auto& [key, bias] : v.items()) {
    int64_t id = -1;
    const bool digits = !key.empty() && key.size() <= 10 && key.find_first_not_of("0123456789") == std::string::npos;
    if (digits) id = std::stoll(key);
    if (!digits || id > std::numeric_limits<int32_t>::max())
      throw bad_request("'logit_bias' keys must be token ids (non-negative integers), got \"" + key + "\"",
                        "logit_bias");
    if (!bias.is_number())
      throw bad_request("'logit_bias' values must be numbers, got " + std::string(bias.type_name()) + " for token " + key,
                        "logit_bias");
    const double b = bias.get<double>();
    if (!(b >= -100.0 && b <= 100.0))
      throw bad_request("'logit_bias' values must be in [-100, 100], got " + bias.dump() + " for token " + key,
                        "logit_bias");
    out.emplace_back(int32_t(id), float(b));
  }
  return out;
}

}  // namespace

void read_logprob_fields(const json& j, ApiKind kind, ApiRequest& r) {
  if (kind == ApiKind::completion) {
    if (const json* v = find(j, "logprobs")) {
      if (v->is_boolean()) throw bad_request("'logprobs' of completions is an integer in [0, 20]", "logprobs");
      r.params.logprobs = read_count(*v, "logprobs");
    }
    if (find(j, "top_logprobs"))
      throw bad_request("'top_logprobs' belongs to chat completions; completions take 'logprobs': k", "top_logprobs");
    if (const json* v = find(j, "echo")) {
      if (!v->is_boolean()) throw bad_request("'echo' must be a boolean", "echo");
      r.echo = v->get<bool>();
    }
    r.params.prompt_logprobs = r.echo && r.params.logprobs >= 0;
  } else {
    bool on = false;
    if (const json* v = find(j, "logprobs")) {
      if (!v->is_boolean()) throw bad_request("'logprobs' of chat completions is a boolean", "logprobs");
      on = v->get<bool>();
    }
    int k = 0;
    if (const json* v = find(j, "top_logprobs")) {
      k = read_count(*v, "top_logprobs");
      if (!on && k > 0) throw bad_request("'top_logprobs' needs 'logprobs': true", "top_logprobs");
    }
    if (on) r.params.logprobs = k;
    if (const json* v = find(j, "echo"))
      if (!v->is_boolean() || v->get<bool>()) throw bad_request("'echo' is not supported by chat completions", "echo");
  }
  if (const json* v = find(j, "logit_bias")) r.params.logit_bias = read_logit_bias(*v);
}

}  // namespace seam
