// The body of an OpenAI /v1/completions or /v1/chat/completions request,
// parsed and type-checked. Every problem throws ApiError(400) naming the
// field; checks that need the model (context length, vocabulary, the served
// name) are the server's.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/sampling_params.h"
#include "server/chat_template.h"

namespace seam {

enum class ApiKind { completion, chat };

// One completion prompt: text, or token ids (OpenAI allows both).
struct PromptInput {
  std::string text;
  std::vector<int32_t> ids;
  bool is_ids = false;
};

struct ApiRequest {
  ApiKind kind = ApiKind::completion;
  std::string model;                 // empty when not given
  std::vector<PromptInput> prompts;  // completion: one or more prompts (a batch)
  std::vector<ChatMessage> messages; // chat
  // chat, in the request's member order (see tool_request.h):
  nlohmann::ordered_json documents;  // a list for the template's `documents`, or null
  nlohmann::ordered_json chat_template_kwargs = nlohmann::ordered_json::object();  // extra template variables
  nlohmann::ordered_json tools;      // the tools the template renders; null: none (or tool_choice "none")
  // "none" | "auto" | "required" | "function" (a named function: tool_choice_name). required and
  // function constrain the output (params.constraint, tool_choice_constraint.h) and the answer is
  // parsed as tool calls (forced_tool_calls.h).
  std::string tool_choice = "auto";
  std::string tool_choice_name;
  bool separate_reasoning = true;    // sglang's field: false leaves the reasoning in content
  bool add_generation_prompt = true;  // chat: the template's assistant header
  bool continue_final_message = false;  // chat: the text ends inside the last message (a prefill)
  // The tokenizer's special tokens (BOS): when not given, completions add them
  // and chat adds them unless the rendered text starts with the BOS text.
  std::optional<bool> add_special_tokens;
  SamplingParams params;             // max_new_tokens from max_tokens / max_completion_tokens
  bool max_tokens_given = false;     // chat without max_tokens: the rest of the context
  int n = 1;                         // choices per prompt
  bool stream = false;
  bool include_usage = false;        // stream_options.include_usage
  bool echo = false;                 // completions: the prompt before the completion (logprob_request.h)
};

constexpr int k_max_n = 16;             // choices per prompt
constexpr int k_max_choices = 1024;     // prompts x n of one request

// Parses `body`; throws ApiError(400) for malformed JSON, invalid UTF-8, a
// wrongly typed or out-of-range field, or an unsupported feature.
ApiRequest parse_api_request(const std::string& body, ApiKind kind);

// The body as a JSON object; 400 for malformed JSON, invalid UTF-8 or another type.
nlohmann::json parse_json_object(const std::string& body);

// Chat's conversation fields of `j` into `r`: messages, tools, tool_choice,
// chat_template_kwargs, documents, separate_reasoning, add_generation_prompt,
// continue_final_message (shared by /v1/chat/completions and /tokenize, so both
// render the same prompt). `ordered` is the same body parsed with member order
// kept (tools, tool calls, documents and kwargs reach the template in the
// client's order; tool_request.h). Throws ApiError(400).
void read_chat_input(const nlohmann::json& j, const nlohmann::ordered_json& ordered, ApiRequest& r);

}  // namespace seam
