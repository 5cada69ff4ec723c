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

// A prompt holds at most max_context - 1 ids (one position is left to
// generate). Encoding stops there, and a text too long by its length alone is
// refused before any of it is tokenized (Tokenizer::encode_at_most): a 400
// naming `field`, in time and memory that follow the context, not the text.
// A long text that was tokenized gives its freed heap back (malloc_trim).
std::vector<int32_t> encode_bounded(const Tokenizer& tok, const std::string& text, bool add_special, int max_context,
                                    const char* field);

// Text encoded with the tokenizer's special tokens (BOS) unless
// `add_special_tokens` is false; bounded as encode_bounded, naming `prompt`.
std::vector<int32_t> encode_text_prompt(const Tokenizer& tok, const std::string& text,
                                        std::optional<bool> add_special_tokens, int max_context);

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
// Bounded as encode_bounded, naming `messages`; `rendered` (when given) gets the text.
std::vector<int32_t> encode_chat_prompt(const ChatTemplate& chat_template, const Tokenizer& tok,
                                        const ApiRequest& r, int max_context, std::string* rendered = nullptr);

}  // namespace seam
