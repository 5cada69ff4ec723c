#include "server/prompt_ids.h"

#include <malloc.h>

#include <algorithm>

#include "server/api_error.h"
#include "server/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace seam {

namespace {
constexpr size_t k_trim_after_bytes = size_t(1) << 20;
}  // namespace

std::vector<int32_t> encode_bounded(const Tokenizer& tok, const std::string& text, bool add_special, int max_context,
                                    const char* field) {
  const size_t max_ids = size_t(std::max(max_context - 1, 0));
  std::optional<std::vector<int32_t>> ids = tok.encode_at_most(text, add_special, max_ids);
  // A long text that was tokenized (it could not be refused by its length)
  // leaves large freed blocks in the heap: give them back to the system.
  if (text.size() >= k_trim_after_bytes) malloc_trim(0);
  if (!ids)
    throw bad_request("This model's maximum context length is " + std::to_string(max_context) +
                          " tokens. However, the prompt has more than " + std::to_string(max_ids) + " tokens (" +
                          std::to_string(text.size()) + " bytes). Reduce the prompt.",
                      field);
  return std::move(*ids);
}

std::vector<int32_t> encode_text_prompt(const Tokenizer& tok, const std::string& text,
                                        std::optional<bool> add_special_tokens, int max_context) {
  return encode_bounded(tok, text, add_special_tokens.value_or(true), max_context, "prompt");
}

namespace {

// Python's str.strip()/lstrip() on ASCII whitespace.
constexpr const char* k_space = " \t\n\r\f\v";
std::string lstrip(const std::string& s) {
  const size_t b = s.find_first_not_of(k_space);
  return b == std::string::npos ? "" : s.substr(b);
}
std::string strip(const std::string& s) {
  const std::string l = lstrip(s);
  const size_t e = l.find_last_not_of(k_space);
  return e == std::string::npos ? "" : l.substr(0, e + 1);
}

}  // namespace

std::string cut_after_final_message(const std::string& rendered, const ChatMessage& final_message) {
  // The last text part when the content came as parts, as transformers takes it.
  const std::string& text = final_message.text_parts.empty() ? final_message.content : final_message.text_parts.back();
  const std::string stripped = strip(text);
  const size_t at = rendered.rfind(stripped);
  if (at == std::string::npos)
    throw bad_request(
        "continue_final_message is set but the final message does not appear in the chat after applying the chat "
        "template",
        "continue_final_message");
  // Keep the message's own trailing spaces when the template kept them.
  const std::string kept = lstrip(text);
  if (rendered.compare(at, kept.size(), kept) == 0 && kept == text) return rendered.substr(0, at + kept.size());
  return rendered.substr(0, at + stripped.size());
}

std::vector<int32_t> encode_chat_prompt(const ChatTemplate& chat_template, const Tokenizer& tok,
                                        const ApiRequest& r, int max_context, std::string* rendered) {
  std::string text;
  try {
    text = chat_template.render(r.messages, r.add_generation_prompt, r.tools, r.documents, r.chat_template_kwargs);
    if (r.continue_final_message) text = cut_after_final_message(text, r.messages.back());
  } catch (const ApiError&) {
    throw;
  } catch (const Error& e) {
    throw bad_request(e.what(), "messages");
  }
  std::vector<int32_t> ids =
      encode_bounded(tok, text, r.add_special_tokens.value_or(!chat_template.writes_bos(text)), max_context, "messages");
  if (rendered) *rendered = std::move(text);
  return ids;
}

}  // namespace seam
