#include "server/tokenize_route.h"

#include "server/api_error.h"
#include "server/completion_job.h"
#include "server/openai_request.h"
#include "server/prompt_ids.h"
#include "server/request_fields.h"

namespace seam {

namespace {

using json = nlohmann::json;

const json* find(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

// The model named by the request, if any, must be the served one (as the completion routes check).
void check_model(const ServerContext& ctx, const json& j) {
  const json* v = find(j, "model");
  if (!v) return;
  if (!v->is_string()) throw bad_request("'model' must be a string", "model");
  const std::string name = v->get<std::string>();
  if (name != ctx.model_name && name != ctx.engine->config().model_path)
    throw ApiError(404, "The model '" + name.substr(0, 64) + "' does not exist; this server serves '" + ctx.model_name + "'",
                   "model", "invalid_request_error", "model_not_found");
}

std::optional<bool> optional_bool(const json& j, const char* key) {
  const json* v = find(j, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw bad_request(std::string("'") + key + "' must be a boolean", key);
  return v->get<bool>();
}

}  // namespace

json tokenize_body(const ServerContext& ctx, const std::string& body) {
  const json j = parse_json_object(body);
  check_request_fields(j, k_tokenize);
  check_model(ctx, j);
  const Tokenizer& tok = ctx.engine->tokenizer();
  const bool has_prompt = find(j, "prompt") != nullptr;
  const bool has_messages = find(j, "messages") != nullptr;
  if (has_prompt && has_messages) throw bad_request("give either 'prompt' or 'messages', not both", "messages");
  if (!has_prompt && !has_messages) throw bad_request("'prompt' or 'messages' is required", "prompt");

  std::vector<int32_t> ids;
  if (has_prompt) {
    const json& p = j["prompt"];
    if (!p.is_string()) throw bad_request("'prompt' must be a string", "prompt");
    if (find(j, "add_generation_prompt"))  // a chat field: it would do nothing here
      throw bad_request("'add_generation_prompt' goes with 'messages', not 'prompt'", "add_generation_prompt");
    ids = encode_text_prompt(tok, p.get<std::string>(), optional_bool(j, "add_special_tokens"), ctx.engine->max_context());
  } else {
    ApiRequest r;
    r.kind = ApiKind::chat;
    read_chat_input(j, nlohmann::ordered_json::parse(body), r);
    r.add_special_tokens = optional_bool(j, "add_special_tokens");
    ids = encode_chat_prompt(*ctx.chat_template, tok, r, ctx.engine->max_context());
  }
  json out;
  out["count"] = ids.size();
  out["max_model_len"] = ctx.engine->max_context();
  out["tokens"] = ids;
  if (optional_bool(j, "return_token_strs").value_or(false)) {  // as convert_ids_to_tokens
    json strs = json::array();
    for (int32_t id : ids) strs.push_back(tok.id_to_token(id));
    out["token_strs"] = std::move(strs);
  }
  return out;
}

json detokenize_body(const ServerContext& ctx, const std::string& body) {
  const json j = parse_json_object(body);
  check_request_fields(j, k_detokenize);
  check_model(ctx, j);
  const json* tokens = find(j, "tokens");
  if (!tokens) throw bad_request("'tokens' is required", "tokens");
  if (!tokens->is_array()) throw bad_request("'tokens' must be a list of token ids", "tokens");
  const Tokenizer& tok = ctx.engine->tokenizer();
  const int64_t vocab = tok.vocab_size();
  std::vector<int32_t> ids;
  ids.reserve(tokens->size());
  for (size_t i = 0; i < tokens->size(); ++i) {
    const json& t = (*tokens)[i];
    const std::string where = "tokens[" + std::to_string(i) + "]";
    if (!t.is_number_integer()) throw bad_request(where + " must be an integer token id", "tokens");
    const bool negative = t.is_number_integer() && !t.is_number_unsigned() && t.get<int64_t>() < 0;
    if (negative || (t.is_number_unsigned() ? t.get<uint64_t>() >= uint64_t(vocab) : t.get<int64_t>() >= vocab))
      throw bad_request(where + " = " + t.dump() + " is not in the vocabulary [0, " + std::to_string(vocab) + ")",
                        "tokens");
    ids.push_back(int32_t(t.get<int64_t>()));
  }
  // As vLLM (Hugging Face's decode default): special tokens are kept in the text.
  return json{{"prompt", tok.decode(ids, false)}};
}

}  // namespace seam
