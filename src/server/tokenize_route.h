// POST /tokenize and POST /detokenize with vLLM's request and response shapes:
//
//   /tokenize   {"model"?, "prompt": str, "add_special_tokens"?: bool = true, "return_token_strs"?}
//            or {"model"?, "messages": [...], "add_generation_prompt"?: bool = true,
//                "add_special_tokens"?: bool, "chat_template_kwargs"?, "documents"?}
//            -> {"count", "max_model_len", "tokens": [...],
//                "token_strs": [...] when "return_token_strs": true}
//   /detokenize {"model"?, "tokens": [ids]} -> {"prompt": text}
//
// The messages form is encoded by the same code as /v1/chat/completions
// (prompt_ids.h), so its count is what a chat completion is fed. Fields are
// checked against request_fields.h like every route's.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace seam {

struct ServerContext;

// The response body; throws ApiError (400 naming the field, 404 for another model).
nlohmann::json tokenize_body(const ServerContext& ctx, const std::string& body);
nlohmann::json detokenize_body(const ServerContext& ctx, const std::string& body);

}  // namespace seam
