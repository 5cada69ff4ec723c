#include "server/prompt_ids.h"

#include "server/api_error.h"
#include "server/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace seam {

std::vector<int32_t> encode_text_prompt(const Tokenizer& tok, const std::string& text,
                                        std::optional<bool> add_special_tokens) {
  return tok.encode(text, add_special_tokens.value_or(true));
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
                                        const ApiRequest& r) {
  std::string text;
  try {
    text = chat_template.render(r.messages, r.add_generation_prompt, r.tools, r.documents, r.chat_template_kwargs);
    if (r.continue_final_message) text = cut_after_final_message(text, r.messages.back());
  } catch (const ApiError&) {
    throw;
  } catch (const Error& e) {
    throw bad_request(e.what(), "messages");
  }
  return tok.encode(text, r.add_special_tokens.value_or(!chat_template.writes_bos(text)));
}

}  // namespace seam
