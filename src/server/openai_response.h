// OpenAI-shaped response bodies and stream chunks for completions and chat
// completions (field names and nesting as api.openai.com sends them).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/finish_reason.h"
#include "server/openai_request.h"

namespace seam {

// The result of one choice once it is finished.
struct ChoiceResult {
  std::string text;
  FinishReason finish_reason = FinishReason::none;
  nlohmann::json logprobs;  // null, or the choice's logprobs (server/logprobs_json.h)
  // Chat with output parsers (chat_output.h): the message replacing {role, content: text},
  // and whether it made tool calls (finish_reason "tool_calls").
  nlohmann::json message;
  bool has_tool_calls = false;
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
};

// Identity shared by every body and chunk of one response.
struct ResponseHeader {
  ApiKind kind = ApiKind::completion;
  std::string id;      // "cmpl-..." / "chatcmpl-..."
  int64_t created = 0; // unix seconds
  std::string model;
};

// "stop" | "length" | "abort"; null while not finished.
nlohmann::json finish_reason_json(FinishReason r);
nlohmann::json usage_json(const Usage& u);

// A whole (non-streamed) response.
nlohmann::json response_body(const ResponseHeader& h, const std::vector<ChoiceResult>& choices, const Usage& usage);

// One stream chunk for choice `index`: text (completions) or delta content
// (chat). `role_only` makes chat's first chunk (delta {role, content: ""}).
// `logprobs`: the chunk's tokens' logprobs (null when not asked).
nlohmann::json stream_chunk(const ResponseHeader& h, int index, const std::string& text, FinishReason finish,
                            bool role_only, bool include_usage, const nlohmann::json& logprobs = nullptr);
// A chat chunk for choice `index` with a ready `delta` (chat_output.h), finish reason and the
// chunk's tokens' logprobs (null when not asked).
nlohmann::json chat_delta_chunk(const ResponseHeader& h, int index, nlohmann::json delta, nlohmann::json finish_reason,
                                bool include_usage, const nlohmann::json& logprobs = nullptr);
// The last chunk when stream_options.include_usage: no choices, the usage.
nlohmann::json usage_chunk(const ResponseHeader& h, const Usage& usage);

// JSON text for the wire; invalid UTF-8 (never expected) is replaced, not thrown.
std::string dump_json(const nlohmann::json& j);
// "data: <json>\n\n"
std::string sse_event(const nlohmann::json& j);

}  // namespace seam
