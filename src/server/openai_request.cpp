#include "server/openai_request.h"

#include <limits>
#include <nlohmann/json.hpp>

#include "core/json_parse.h"
#include "server/api_error.h"
#include "server/logprob_request.h"
#include "server/request_fields.h"
#include "server/structured_output_request.h"
#include "server/tool_request.h"

namespace seam {

namespace {

using json = nlohmann::json;

const char* type_name(const json& v) {
  if (v.is_number_integer()) return "integer";
  if (v.is_number_float()) return "number";
  return v.type_name();
}

ApiError wrong_type(const std::string& key, const char* expected, const json& v) {
  return bad_request("'" + key + "' must be " + expected + ", got " + type_name(v), key);
}

// The value of `key`, or nullptr when absent or null (OpenAI treats null as absent).
const json* find(const json& j, const std::string& key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

bool read_bool(const json& j, const std::string& key, bool fallback) {
  const json* v = find(j, key);
  if (!v) return fallback;
  if (!v->is_boolean()) throw wrong_type(key, "a boolean", *v);
  return v->get<bool>();
}

// Integers only: 1.5 or "3" for a count is a client bug, not something to round.
int64_t read_int(const json& v, const std::string& key, int64_t lo, int64_t hi) {
  if (!v.is_number_integer()) throw wrong_type(key, "an integer", v);
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
    throw bad_request("'" + key + "' is out of range", key);
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi)
    throw bad_request("'" + key + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                          std::to_string(x),
                      key);
  return x;
}

template <typename T>
void read_int_field(const json& j, const std::string& key, T& out, int64_t lo, int64_t hi) {
  if (const json* v = find(j, key)) out = T(read_int(*v, key, lo, hi));
}

void read_float_field(const json& j, const std::string& key, float& out) {
  const json* v = find(j, key);
  if (!v) return;
  if (!v->is_number()) throw wrong_type(key, "a number", *v);
  const double x = v->get<double>();
  if (!(x >= -1e30 && x <= 1e30)) throw bad_request("'" + key + "' is out of range", key);
  out = float(x);
}

std::string read_string(const json& v, const std::string& key) {
  if (!v.is_string()) throw wrong_type(key, "a string", v);
  return v.get<std::string>();
}

std::vector<int32_t> read_ids(const json& arr, const std::string& key) {
  std::vector<int32_t> ids;
  ids.reserve(arr.size());
  for (const json& x : arr) ids.push_back(int32_t(read_int(x, key, 0, std::numeric_limits<int32_t>::max())));
  return ids;
}

std::vector<PromptInput> read_prompts(const json& j) {
  const json* p = find(j, "prompt");
  if (!p) throw bad_request("'prompt' is required", "prompt");
  std::vector<PromptInput> prompts;
  if (p->is_string()) {
    prompts.push_back(PromptInput{p->get<std::string>(), {}, false});
  } else if (p->is_array()) {
    if (p->empty()) throw bad_request("'prompt' is an empty list", "prompt");
    const json& first = (*p)[0];
    if (first.is_number()) {  // one prompt of token ids
      prompts.push_back(PromptInput{"", read_ids(*p, "prompt"), true});
    } else {  // a batch: strings, or lists of token ids
      for (const json& e : *p) {
        if (e.is_string()) {
          prompts.push_back(PromptInput{e.get<std::string>(), {}, false});
        } else if (e.is_array()) {
          if (e.empty()) throw bad_request("'prompt' holds an empty list of token ids", "prompt");
          prompts.push_back(PromptInput{"", read_ids(e, "prompt"), true});
        } else {
          throw bad_request(std::string("'prompt' list items must be strings or lists of token ids, got ") +
                                type_name(e),
                            "prompt");
        }
      }
    }
  } else {
    throw wrong_type("prompt", "a string, a list of strings or a list of token ids", *p);
  }
  return prompts;
}

std::string read_content(const json& m, size_t i) {
  const std::string key = "messages[" + std::to_string(i) + "].content";
  const json* c = find(m, "content");
  if (!c) return "";
  if (c->is_string()) return c->get<std::string>();
  if (!c->is_array()) throw wrong_type(key, "a string or a list of content parts", *c);
  // Text parts joined by newlines (as vLLM and sglang do for string-content templates).
  std::string text;
  for (size_t k = 0; k < c->size(); ++k) {
    const json& part = (*c)[k];
    if (!part.is_object() || !part.contains("type") || part["type"] != "text" || !part.contains("text") ||
        !part["text"].is_string())
      throw bad_request(key + ": only {\"type\": \"text\", \"text\": ...} parts are supported", key);
    if (k > 0) text += "\n";
    text += part["text"].get<std::string>();
  }
  return text;
}

std::vector<ChatMessage> read_messages(const json& j) {
  const json* ms = find(j, "messages");
  if (!ms) throw bad_request("'messages' is required", "messages");
  if (!ms->is_array()) throw wrong_type("messages", "a list", *ms);
  if (ms->empty()) throw bad_request("'messages' is empty", "messages");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < ms->size(); ++i) {
    const json& m = (*ms)[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) throw wrong_type(where, "an object", m);
    const json* role = find(m, "role");
    if (!role) throw bad_request(where + ".role is required", where + ".role");
    std::string r = read_string(*role, where + ".role");
    if (r == "developer") r = "system";  // OpenAI's newer name for the system role
    if (r != "system" && r != "user" && r != "assistant" && r != "tool")
      throw bad_request(where + ".role '" + r.substr(0, 64) + (r.size() > 64 ? "...'" : "'") +  // no long echo
                            " is not supported (system, user, assistant, tool)",
                        where + ".role");
    ChatMessage message;
    message.role = r;
    message.content = read_content(m, i);
    if (const json* c = find(m, "content"); c && c->is_array())  // parts, already checked by read_content
      for (const json& part : *c) message.text_parts.push_back(part["text"].get<std::string>());
    out.push_back(std::move(message));
  }
  return out;
}

}  // namespace

nlohmann::json parse_json_object(const std::string& body) {
  json j;
  try {
    j = parse_json_document(body);  // also rejects invalid UTF-8 inside strings
  } catch (const JsonParseError& e) {
    // A number past the double range (1e400) names its field; a syntax error names none.
    if (!e.field().empty()) throw bad_request(e.what(), e.field());
    throw bad_request(std::string("the body is ") + e.what());
  }
  if (!j.is_object()) throw bad_request(std::string("the body must be a JSON object, got ") + type_name(j));
  return j;
}

void read_chat_input(const nlohmann::json& j, const nlohmann::ordered_json& ordered, ApiRequest& r) {
  r.messages = read_messages(j);
  // Tools, tool calls, documents and chat_template_kwargs (e.g. {"enable_thinking": false})
  // reach the template in the client's member order: read from the order-keeping parse.
  read_chat_tool_fields(ordered, r);
  // As transformers: continuing the last message excludes a new assistant
  // header; when add_generation_prompt is not given it follows (vLLM's default
  // of true would make every continue_final_message request an error).
  r.continue_final_message = read_bool(j, "continue_final_message", false);
  r.add_generation_prompt = read_bool(j, "add_generation_prompt", !r.continue_final_message);
  if (r.continue_final_message && r.add_generation_prompt)
    throw bad_request("'continue_final_message' and 'add_generation_prompt' cannot both be true",
                      "continue_final_message");
}

ApiRequest parse_api_request(const std::string& body, ApiKind kind) {
  const json j = parse_json_object(body);
  ApiRequest r;
  r.kind = kind;
  // Every field is honoured, harmless or refused (request_fields.cpp); an
  // unknown or refused one is a 400 naming it, before anything reads the body.
  check_request_fields(j, kind == ApiKind::chat ? k_chat : k_completions);
  // The fields' own values: 400 naming the field (logprob_request.cpp).
  read_logprob_fields(j, kind, r);
  if (const json* v = find(j, "model")) r.model = read_string(*v, "model");
  if (find(j, "add_special_tokens")) r.add_special_tokens = read_bool(j, "add_special_tokens", true);
  // Tools, documents, kwargs and schemas keep the client's member order: read from a second,
  // order-keeping parse (only when a field needs it).
  std::optional<nlohmann::ordered_json> ordered;
  if (kind == ApiKind::chat || has_structured_output_fields(j)) ordered = nlohmann::ordered_json::parse(body);
  if (kind == ApiKind::completion) {
    r.prompts = read_prompts(j);
  } else {
    read_chat_input(j, *ordered, r);  // a named or "required" tool_choice sets the constraint
  }
  // response_format, regex, structured_outputs, guided_*: 400 when a second constraint is asked.
  if (ordered) read_structured_output_fields(*ordered, r);

  SamplingParams& p = r.params;
  p.max_new_tokens = 16;  // OpenAI's default for completions; chat defaults to the rest of the context
  const int64_t max_tokens_hi = std::numeric_limits<int32_t>::max();
  if (const json* v = find(j, "max_tokens")) {
    p.max_new_tokens = int32_t(read_int(*v, "max_tokens", 0, max_tokens_hi));
    r.max_tokens_given = true;
  }
  if (kind == ApiKind::chat) {
    if (const json* v = find(j, "max_completion_tokens")) {
      p.max_new_tokens = int32_t(read_int(*v, "max_completion_tokens", 0, max_tokens_hi));
      r.max_tokens_given = true;
    }
  }
  read_float_field(j, "temperature", p.temperature);
  read_float_field(j, "top_p", p.top_p);
  read_int_field(j, "top_k", p.top_k, -1, std::numeric_limits<int32_t>::max());
  if (p.top_k == 0) p.top_k = -1;  // vLLM/sglang: 0 also means off
  read_float_field(j, "min_p", p.min_p);
  read_float_field(j, "frequency_penalty", p.frequency_penalty);
  read_float_field(j, "presence_penalty", p.presence_penalty);
  read_float_field(j, "repetition_penalty", p.repetition_penalty);
  if (const json* v = find(j, "seed")) {
    p.seed = uint64_t(read_int(*v, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()));
  }
  if (const json* v = find(j, "stop")) {
    if (v->is_string()) {
      p.stop = {v->get<std::string>()};
    } else if (v->is_array()) {
      for (const json& s : *v) p.stop.push_back(read_string(s, "stop"));
    } else {
      throw wrong_type("stop", "a string or a list of strings", *v);
    }
    for (const auto& s : p.stop)
      if (s.empty()) throw bad_request("'stop' holds an empty string", "stop");
  }
  if (const json* v = find(j, "stop_token_ids")) {
    if (!v->is_array()) throw wrong_type("stop_token_ids", "a list of token ids", *v);
    p.stop_token_ids = read_ids(*v, "stop_token_ids");
  }
  p.ignore_eos = read_bool(j, "ignore_eos", false);
  p.skip_special_tokens = read_bool(j, "skip_special_tokens", true);
  p.disable_speculative = read_bool(j, "disable_speculative", false);

  read_int_field(j, "n", r.n, 1, k_max_n);
  r.stream = read_bool(j, "stream", false);
  if (const json* v = find(j, "stream_options")) {
    if (!v->is_object()) throw wrong_type("stream_options", "an object", *v);
    r.include_usage = read_bool(*v, "include_usage", false);
  }
  const size_t n_choices = (kind == ApiKind::completion ? r.prompts.size() : 1) * size_t(r.n);
  if (n_choices > size_t(k_max_choices))
    throw bad_request("the request asks for " + std::to_string(n_choices) + " choices (prompts x n); the limit is " +
                          std::to_string(k_max_choices),
                      "prompt");
  return r;
}

}  // namespace seam
