// The token ids of a request's prompt, one way for every route that takes
// one: /v1/completions and /v1/chat/completions encode with these, and so does
// /tokenize, so that /tokenize counts exactly the tokens a completion is fed.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/openai_request.h"

namespace seam {

class ChatTemplate;
class Tokenizer;

// Text encoded with the tokenizer's special tokens (BOS) unless
// `add_special_tokens` is false.
std::vector<int32_t> encode_text_prompt(const Tokenizer& tok, const std::string& text,
                                        std::optional<bool> add_special_tokens);

// continue_final_message, as transformers' apply_chat_template does it: the
// rendered text cut right after the last occurrence of the final message's
// (stripped) text, keeping its trailing spaces where the template kept them,
// so the model continues that message. 400 when the text is not there.
std::string cut_after_final_message(const std::string& rendered, const ChatMessage& final_message);

// The conversation of `r` (messages, tools, documents, chat_template_kwargs,
// add_generation_prompt, continue_final_message) rendered by the template and encoded. Special tokens
// are added unless the rendered text starts with the BOS text (the template
// wrote it: no doubled BOS), or as `r.add_special_tokens` says when given.
// A template error is ApiError(400) with the template's message, naming `messages`.
std::vector<int32_t> encode_chat_prompt(const ChatTemplate& chat_template, const Tokenizer& tok,
                                        const ApiRequest& r);

}  // namespace seam
