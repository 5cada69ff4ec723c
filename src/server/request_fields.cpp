#include "server/request_fields.h"

#include <string>

#include <nlohmann/json.hpp>

#include "server/api_error.h"

namespace seam {

namespace {

using S = FieldStatus;

// Grouped by status. `origin` is where the field comes from; a field several
// APIs share is one row. Rows marked refused_until_implemented name the work
// that flips them; everything else that is refused says what is missing.
constexpr RequestField k_fields[] = {
    // ---- honoured ----
    {"model", k_all, S::honoured, "OpenAI", "must name the served model (or its path); 404 otherwise"},
    {"prompt", k_completions | k_tokenize, S::honoured, "OpenAI", "text, texts, token ids or lists of token ids"},
    {"messages", k_chat | k_tokenize, S::honoured, "OpenAI", "rendered by the chat template"},
    {"tokens", k_detokenize, S::honoured, "vLLM", "the token ids to decode"},
    {"max_tokens", k_generate, S::honoured, "OpenAI", "tokens to generate"},
    {"max_completion_tokens", k_chat, S::honoured, "OpenAI", "tokens to generate (chat's newer name)"},
    {"temperature", k_generate, S::honoured, "OpenAI", "sampling"},
    {"top_p", k_generate, S::honoured, "OpenAI", "sampling"},
    {"top_k", k_generate, S::honoured, "vLLM, sglang", "sampling (0 or -1: off)"},
    {"min_p", k_generate, S::honoured, "vLLM, sglang", "sampling"},
    {"frequency_penalty", k_generate, S::honoured, "OpenAI", "penalty"},
    {"presence_penalty", k_generate, S::honoured, "OpenAI", "penalty"},
    {"repetition_penalty", k_generate, S::honoured, "vLLM, sglang", "penalty"},
    {"seed", k_generate, S::honoured, "OpenAI", "the sampler's seed (choice j of n uses seed + j)"},
    {"stop", k_generate, S::honoured, "OpenAI", "stop strings, left out of the text"},
    {"stop_token_ids", k_generate, S::honoured, "vLLM, sglang", "extra stop token ids"},
    {"ignore_eos", k_generate, S::honoured, "vLLM, sglang", "generate past EOS"},
    {"disable_speculative", k_generate, S::honoured, "seam",
     "true: this request does not speculate (--speculative-algorithm); the output is the same either way"},
    {"skip_special_tokens", k_generate, S::honoured, "vLLM, sglang", "special tokens left out of the text"},
    {"n", k_generate, S::honoured, "OpenAI", "choices per prompt (1-16)"},
    {"stream", k_generate, S::honoured, "OpenAI", "server-sent events"},
    {"stream_options", k_generate, S::honoured, "OpenAI", "include_usage: a last chunk with the usage"},
    {"add_special_tokens", k_generate | k_tokenize, S::honoured, "vLLM",
     "the tokenizer's special tokens (BOS); default: completions yes, chat as the template needs (no doubled BOS)"},
    {"add_generation_prompt", k_chat | k_tokenize, S::honoured, "vLLM", "the template's assistant header (default true)"},
    {"chat_template_kwargs", k_chat | k_tokenize, S::honoured, "vLLM, sglang",
     "extra template variables (e.g. enable_thinking)"},
    {"documents", k_chat | k_tokenize, S::honoured, "vLLM", "the template's `documents` (RAG)"},
    {"return_token_strs", k_tokenize, S::honoured, "vLLM", "token_strs: each id's vocabulary string"},
    {"continue_final_message", k_chat | k_tokenize, S::honoured, "vLLM, sglang",
     "the prompt ends inside the last message, which the model continues (transformers' rule)"},
    // issue 20: logprob_request.cpp and tool_request.cpp read these
    {"logprobs", k_generate, S::honoured, "OpenAI",
     "log probabilities: completions an integer (top alternatives), chat a boolean (logprob_request.cpp)"},
    {"top_logprobs", k_chat, S::honoured, "OpenAI", "chat's alternatives per token (0-20, with logprobs true)"},
    {"echo", k_completions, S::honoured, "OpenAI", "the prompt before the completion, with its logprobs when asked"},
    {"logit_bias", k_generate, S::honoured, "OpenAI", "token id -> bias (-100..100) added to the logits"},
    {"tools", k_chat | k_tokenize, S::honoured, "OpenAI",
     "rendered by the chat template; with --tool-call-parser the calls come back as message.tool_calls"},
    {"tool_choice", k_chat, S::honoured, "OpenAI",
     "none (tools not rendered), auto (--tool-call-parser), required or a named function (the output constrained "
     "to the call's JSON, parsed into tool_calls; tool_request.cpp)"},
    {"separate_reasoning", k_chat, S::honoured, "sglang",
     "with --reasoning-parser: reasoning in reasoning_content (default true) or left in content"},

    // ---- accepted: they change nothing seam produces ----
    {"user", k_generate, S::harmless, "OpenAI", "an end-user id for OpenAI's abuse monitoring; seam keeps no per-user state"},
    {"safety_identifier", k_chat, S::harmless, "OpenAI", "as `user`: an id for abuse monitoring"},
    {"service_tier", k_chat, S::harmless, "OpenAI", "OpenAI's processing tier; seam has one"},
    {"store", k_chat, S::harmless, "OpenAI", "OpenAI stores the completion for its dashboard; seam stores nothing"},
    {"metadata", k_chat, S::harmless, "OpenAI", "tags of stored completions; seam stores nothing"},
    {"prompt_cache_key", k_chat, S::harmless, "OpenAI",
     "a routing hint for OpenAI's prompt cache; seam's prefix cache matches by content"},
    {"prediction", k_chat, S::harmless, "OpenAI", "predicted output: a latency hint, the answer is the same without it"},
    {"parallel_tool_calls", k_chat, S::harmless, "OpenAI",
     "whether several tool calls may come in one turn: every call the model writes is returned either way, and "
     "tool_choice \"required\" allows several (vLLM ignores it too)"},
    {"request_id", k_generate, S::harmless, "vLLM", "a caller's id for logs; seam names responses itself"},
    {"rid", k_generate, S::harmless, "sglang", "a caller's id for logs; seam names responses itself"},
    {"custom_labels", k_generate, S::harmless, "sglang", "metric labels; seam's metrics have no per-request labels"},
    {"guided_decoding_backend", k_generate, S::harmless, "vLLM",
     "a structured-output backend's name (xgrammar, guidance, ...): seam has one grammar engine, whose output "
     "fits the constraint whatever the name (a string; vLLM V1 also decides the backend at start)"},

    // issue 21: structured output (structured_output_request.cpp reads these; one per request)
    {"response_format", k_generate, S::honoured, "OpenAI",
     "structured output: {type: text | json_object | json_schema, json_schema: {name, schema, strict}}"},
    {"regex", k_generate, S::honoured, "sglang", "structured output: the output matches the regular expression"},
    {"ebnf", k_generate, S::honoured, "sglang", "structured output: the output is a sentence of the EBNF grammar"},
    {"json_schema", k_generate, S::honoured, "sglang",
     "structured output: JSON fitting the schema (an object or a string of JSON)"},
    {"guided_json", k_generate, S::honoured, "vLLM", "structured output: JSON fitting the schema (vLLM's older name)"},
    {"guided_regex", k_generate, S::honoured, "vLLM", "structured output: a regular expression (vLLM's older name)"},
    {"guided_choice", k_generate, S::honoured, "vLLM", "structured output: one of a list of strings (vLLM's older name)"},
    {"guided_grammar", k_generate, S::honoured, "vLLM", "structured output: an EBNF grammar (vLLM's older name)"},
    {"structured_outputs", k_generate, S::honoured, "vLLM",
     "structured output: {json | regex | choice | grammar | json_object, disable_any_whitespace?}"},

    // ---- refused: not implemented, and they change the output ----
    {"best_of", k_generate, S::refused, "OpenAI", "best_of other than 1 (ranking n samples needs logprobs)", "[1]"},
    {"suffix", k_completions, S::refused, "OpenAI", "suffix (fill-in-the-middle)", R"([""])"},
    {"echo", k_chat, S::refused, "vLLM", "chat echo (the last message prepended to the answer)", "[false]"},
    {"functions", k_chat, S::refused, "OpenAI", "the legacy functions API (use tools)"},
    {"function_call", k_chat, S::refused, "OpenAI", "the legacy functions API (use tool_choice)"},
    {"reasoning_effort", k_chat, S::refused, "OpenAI, sglang", "reasoning_effort (it switches templates' thinking)"},
    {"verbosity", k_chat, S::refused, "OpenAI", "verbosity"},
    {"modalities", k_chat, S::refused, "OpenAI", "output modalities other than text", R"([["text"]])"},
    {"audio", k_chat, S::refused, "OpenAI", "audio output"},
    {"web_search_options", k_chat, S::refused, "OpenAI", "web search"},
    {"min_tokens", k_generate, S::refused, "vLLM, sglang", "min_tokens (the engine has no minimum length)", "[0]"},
    {"prompt_logprobs", k_generate, S::refused, "vLLM", "prompt_logprobs"},
    {"use_beam_search", k_generate, S::refused, "vLLM", "beam search", "[false]"},
    {"length_penalty", k_generate, S::refused, "vLLM", "length_penalty (beam search)", "[1]"},
    {"include_stop_str_in_output", k_generate, S::refused, "vLLM", "stop strings kept in the output", "[false]"},
    {"no_stop_trim", k_generate, S::refused, "sglang", "stop strings kept in the output", "[false]"},
    {"stop_regex", k_generate, S::refused, "sglang", "regular-expression stops"},
    {"spaces_between_special_tokens", k_generate, S::refused, "vLLM", "spaces_between_special_tokens=false", "[true]"},
    {"truncate_prompt_tokens", k_generate, S::refused, "vLLM", "prompt truncation"},
    {"allowed_token_ids", k_generate, S::refused, "vLLM", "allowed_token_ids"},
    {"bad_words", k_generate, S::refused, "vLLM", "bad_words", "[[]]"},
    {"logits_processors", k_generate, S::refused, "vLLM", "custom logits processors"},
    {"custom_logit_processor", k_generate, S::refused, "sglang", "custom logits processors"},
    {"custom_params", k_generate, S::refused, "sglang", "custom logits processors' parameters"},
    {"guided_whitespace_pattern", k_generate, S::refused, "vLLM",
     "a structured-output whitespace pattern (JSON output is compact, or any JSON whitespace with "
     "structured_outputs.disable_any_whitespace false)"},
    {"structural_tag", k_generate, S::refused, "vLLM", "structural tags"},
    {"return_tokens_as_token_ids", k_generate, S::refused, "vLLM", "token ids in place of token texts", "[false]"},
    {"return_token_ids", k_generate, S::refused, "vLLM, sglang", "token ids in the response", "[false]"},
    {"return_hidden_states", k_generate, S::refused, "sglang", "hidden states in the response", "[false]"},
    {"lora_path", k_generate, S::refused, "sglang", "LoRA adapters"},
    {"priority", k_generate, S::refused, "vLLM, sglang", "priority scheduling (the queue is FIFO)", "[0]"},
    {"cache_salt", k_generate, S::refused, "vLLM, sglang",
     "a salted prefix cache: accepting it would promise an isolation seam does not give"},
    {"extra_key", k_generate, S::refused, "sglang", "a namespaced prefix cache (as cache_salt)"},
    {"session_id", k_generate, S::refused, "sglang", "sessions"},
    {"session_params", k_generate, S::refused, "sglang", "sessions"},
    {"bootstrap_host", k_generate, S::refused, "sglang", "prefill/decode disaggregation"},
    {"bootstrap_port", k_generate, S::refused, "sglang", "prefill/decode disaggregation"},
    {"bootstrap_room", k_generate, S::refused, "sglang", "prefill/decode disaggregation"},
    {"kv_transfer_params", k_generate, S::refused, "vLLM", "prefill/decode disaggregation"},
    {"data_parallel_rank", k_generate, S::refused, "sglang", "data-parallel routing"},
    {"vllm_xargs", k_generate, S::refused, "vLLM", "extension arguments"},
    {"mm_processor_kwargs", k_chat | k_tokenize, S::refused, "vLLM", "multimodal input"},
    {"chat_template", k_chat | k_tokenize, S::refused, "vLLM",
     "a per-request template (the template is fixed at start: --chat-template)"},
    {"stream_reasoning", k_chat, S::refused, "sglang", "stream_reasoning"},
    {"include_reasoning", k_chat, S::refused, "vLLM", "include_reasoning=false", "[true]"},
};

bool is_neutral(const RequestField& f, const nlohmann::json& value) {
  if (!f.neutral_values) return false;
  static_assert(sizeof(k_fields) > 0);
  const nlohmann::json neutral = nlohmann::json::parse(f.neutral_values);
  for (const nlohmann::json& v : neutral)
    if (v == value) return true;
  return false;
}

// The endpoints (other than `endpoint`) where `name` is a field, for the hint.
std::string other_endpoints(std::string_view name, Endpoint endpoint) {
  std::string out;
  for (Endpoint e : {k_completions, k_chat, k_tokenize, k_detokenize}) {
    if (e == endpoint || !find_request_field(name, e)) continue;
    out += out.empty() ? "" : ", ";
    out += endpoint_path(e);
  }
  return out;
}

}  // namespace

std::span<const RequestField> request_fields() { return k_fields; }

const RequestField* find_request_field(std::string_view name, Endpoint endpoint) {
  for (const RequestField& f : k_fields)
    if ((f.endpoints & endpoint) && name == f.name) return &f;
  return nullptr;
}

const char* endpoint_path(Endpoint endpoint) {
  switch (endpoint) {
    case k_completions: return "/v1/completions";
    case k_chat: return "/v1/chat/completions";
    case k_tokenize: return "/tokenize";
    case k_detokenize: return "/detokenize";
    default: return "?";
  }
}

void check_request_fields(const nlohmann::json& body, Endpoint endpoint) {
  for (auto it = body.begin(); it != body.end(); ++it) {
    const std::string& key = it.key();
    const RequestField* f = find_request_field(key, endpoint);
    if (!f) {
      const std::string elsewhere = other_endpoints(key, endpoint);
      const std::string shown = key.size() > 64 ? key.substr(0, 64) + "..." : key;  // no long echo
      if (!elsewhere.empty())
        throw bad_request("'" + shown + "' is not a field of " + endpoint_path(endpoint) + " (it is one of " + elsewhere +
                              ")",
                          key);
      throw bad_request("unknown field '" + shown + "': " + endpoint_path(endpoint) +
                            " refuses fields it does not know rather than ignore them",
                        key);
    }
    if (f->status != FieldStatus::refused && f->status != FieldStatus::refused_until_implemented) continue;
    if (it->is_null() || is_neutral(*f, *it)) continue;  // asks for nothing
    throw bad_request(std::string("'") + f->name + "' is not supported: " + f->reason, key);
  }
}

}  // namespace seam
