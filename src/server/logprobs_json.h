// Log probabilities in OpenAI's response shapes, formatted incrementally (a stream
// formats each chunk's tokens as they come; a whole response formats them all at once):
//   chat:        logprobs.content[] = {token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}
//   completions: logprobs = {tokens, token_logprobs, top_logprobs, text_offset} (the legacy shape;
//                top_logprobs[i] maps each of the top-k tokens' text, and the chosen one's, to its
//                logprob; a prompt's first token has null for both)
// A token's text is what it adds to the text decoded so far (so SentencePiece's word-start
// space is kept); text_offset is its byte offset in the choice's text.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/token_logprob.h"
#include "tokenizer/tokenizer.h"

namespace seam {

class LogprobsJson {
 public:
  explicit LogprobsJson(const Tokenizer& tok) : tok_(tok) {}

  // Chat: the entries of logprobs.content for these tokens, appended to `content`.
  void append_chat(const std::vector<TokenLogprob>& lps, nlohmann::json& content);
  // Completions: these tokens appended to the four arrays of `obj` (made when null).
  void append_completion(const std::vector<TokenLogprob>& lps, nlohmann::json& obj);
  // The token before the first one formatted (the prompt's last, when the prompt is not echoed).
  void set_context(int32_t prev_id) { prev_id_ = prev_id; }
  // The byte offset of the next token (after an echoed prompt: the prompt text's length).
  void set_text_offset(size_t offset) { text_offset_ = offset; }
  // The text of token `id` after the tokens seen so far (exposed for tests).
  std::string token_text(int32_t id) const;

 private:
  const Tokenizer& tok_;
  int32_t prev_id_ = -1;     // the last token formatted: the context of the next one's text
  size_t text_offset_ = 0;   // bytes of text before the next token
};

// A logprob as JSON: finite values as they are, -inf as -9999.0 (vLLM's convention: JSON
// has no infinity), NaN (no logprob: a prompt's first token) as null.
nlohmann::json logprob_value(float lp);

}  // namespace seam
