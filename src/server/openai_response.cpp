#include "server/openai_response.h"

namespace seam {

using json = nlohmann::json;

json finish_reason_json(FinishReason r) {
  if (r == FinishReason::none) return nullptr;
  return finish_reason_name(r);
}

json usage_json(const Usage& u) {
  json j;
  j["prompt_tokens"] = u.prompt_tokens;
  j["completion_tokens"] = u.completion_tokens;
  j["total_tokens"] = u.prompt_tokens + u.completion_tokens;
  j["prompt_tokens_details"] = {{"cached_tokens", u.cached_tokens}};
  return j;
}

namespace {
json head(const ResponseHeader& h, const char* object) {
  json j;
  j["id"] = h.id;
  j["object"] = object;
  j["created"] = h.created;
  j["model"] = h.model;
  return j;
}
}  // namespace

json response_body(const ResponseHeader& h, const std::vector<ChoiceResult>& choices, const Usage& usage) {
  const bool chat = h.kind == ApiKind::chat;
  json j = head(h, chat ? "chat.completion" : "text_completion");
  json arr = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    json c;
    c["index"] = i;
    if (chat) {
      if (choices[i].message.is_null()) {
        c["message"] = {{"role", "assistant"}, {"content", choices[i].text}};
      } else {
        c["message"] = choices[i].message;
      }
    } else {
      c["text"] = choices[i].text;
    }
    c["logprobs"] = choices[i].logprobs;
    c["finish_reason"] = choices[i].has_tool_calls && (choices[i].finish_reason == FinishReason::stop ||
                                                       choices[i].finish_reason == FinishReason::length)
                             ? json("tool_calls")
                             : finish_reason_json(choices[i].finish_reason);
    arr.push_back(std::move(c));
  }
  j["choices"] = std::move(arr);
  j["usage"] = usage_json(usage);
  if (chat) j["system_fingerprint"] = nullptr;
  return j;
}

json stream_chunk(const ResponseHeader& h, int index, const std::string& text, FinishReason finish, bool role_only,
                  bool include_usage, const json& logprobs) {
  const bool chat = h.kind == ApiKind::chat;
  json j = head(h, chat ? "chat.completion.chunk" : "text_completion");
  json c;
  c["index"] = index;
  if (chat) {
    if (role_only) {
      c["delta"] = {{"role", "assistant"}, {"content", ""}};
    } else if (!text.empty()) {
      c["delta"] = {{"content", text}};
    } else {
      c["delta"] = json::object();
    }
  } else {
    c["text"] = text;
  }
  c["logprobs"] = logprobs;
  c["finish_reason"] = finish_reason_json(finish);
  j["choices"] = json::array({std::move(c)});
  if (chat) j["system_fingerprint"] = nullptr;
  if (include_usage) j["usage"] = nullptr;
  return j;
}

json chat_delta_chunk(const ResponseHeader& h, int index, json delta, json finish_reason, bool include_usage,
                      const json& logprobs) {
  json j = head(h, "chat.completion.chunk");
  json c;
  c["index"] = index;
  c["delta"] = std::move(delta);
  c["logprobs"] = logprobs;
  c["finish_reason"] = std::move(finish_reason);
  j["choices"] = json::array({std::move(c)});
  j["system_fingerprint"] = nullptr;
  if (include_usage) j["usage"] = nullptr;
  return j;
}

json usage_chunk(const ResponseHeader& h, const Usage& usage) {
  json j = head(h, h.kind == ApiKind::chat ? "chat.completion.chunk" : "text_completion");
  j["choices"] = json::array();
  j["usage"] = usage_json(usage);
  return j;
}

std::string dump_json(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse_event(const json& j) { return "data: " + dump_json(j) + "\n\n"; }

}  // namespace seam
