#include "server/prompt_ids.h"

#include "server/api_error.h"
#include "server/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace seam {

std::vector<int32_t> encode_text_prompt(const Tokenizer& tok, const std::string& text,
                                        std::optional<bool> add_special_tokens) {
  return tok.encode(text, add_special_tokens.value_or(true));
}

std::vector<int32_t> encode_chat_prompt(const ChatTemplate& chat_template, const Tokenizer& tok,
                                        const ApiRequest& r) {
  std::string text;
  try {
    text = chat_template.render(r.messages, r.add_generation_prompt, r.documents, r.chat_template_kwargs);
  } catch (const ApiError&) {
    throw;
  } catch (const Error& e) {
    throw bad_request(e.what(), "messages");
  }
  return tok.encode(text, r.add_special_tokens.value_or(!chat_template.writes_bos(text)));
}

}  // namespace seam
