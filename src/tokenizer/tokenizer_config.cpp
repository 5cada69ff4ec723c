#include "tokenizer/tokenizer_config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/json_parse.h"
#include "tokenizer/json_fields.h"

namespace seam {

namespace {

using json_fields::json;

// A token field is a string, null, or {"content": "..."} (AddedToken form).
std::string token_name(const json& cfg, const char* key, const std::string& where) {
  auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  SEAM_CHECK(it->is_object(), where, ".", key, ": expected a string, null or {\"content\": ...}");
  return json_fields::require_string(*it, "content", where + "." + key);
}

std::optional<bool> optional_flag(const json& cfg, const char* key, const std::string& where) {
  auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) return std::nullopt;
  SEAM_CHECK(it->is_boolean(), where, ".", key, ": expected true or false");
  return it->get<bool>();
}

}  // namespace

TokenizerConfig read_tokenizer_config(const std::string& path) {
  TokenizerConfig config;
  if (!std::filesystem::exists(path)) return config;
  std::ifstream in(path, std::ios::binary);
  SEAM_CHECK(in, path, ": cannot open");
  std::stringstream buffer;
  buffer << in.rdbuf();
  json cfg;
  try {
    cfg = json::parse(buffer.str());
  } catch (const json::exception& e) {
    throw Error(path + ": not valid JSON: " + json_error_text(e));
  }
  SEAM_CHECK(cfg.is_object(), path, ": expected a JSON object at the top level");
  config.present = true;
  config.add_bos_token = optional_flag(cfg, "add_bos_token", path);
  config.add_eos_token = optional_flag(cfg, "add_eos_token", path);
  config.bos_token = token_name(cfg, "bos_token", path);
  config.eos_token = token_name(cfg, "eos_token", path);
  config.unk_token = token_name(cfg, "unk_token", path);
  if (auto it = cfg.find("added_tokens_decoder"); it != cfg.end() && !it->is_null()) {
    SEAM_CHECK(it->is_object(), path, ".added_tokens_decoder: expected an object {id: token}");
    for (auto t = it->begin(); t != it->end(); ++t) {
      const std::string where = path + ".added_tokens_decoder[\"" + t.key() + "\"]";
      AddedToken token;
      try {
        size_t used = 0;
        token.id = std::stoi(t.key(), &used);
        SEAM_CHECK(used == t.key().size() && token.id >= 0, where, ": the key must be a token id");
      } catch (const std::logic_error&) {
        throw Error(where + ": the key must be a token id");
      }
      token.content = json_fields::require_string(*t, "content", where);
      token.single_word = json_fields::optional_bool(*t, "single_word", false, where);
      token.lstrip = json_fields::optional_bool(*t, "lstrip", false, where);
      token.rstrip = json_fields::optional_bool(*t, "rstrip", false, where);
      token.special = json_fields::optional_bool(*t, "special", false, where);
      token.normalized = json_fields::optional_bool(*t, "normalized", !token.special, where);
      config.added_tokens.push_back(std::move(token));
    }
    std::sort(config.added_tokens.begin(), config.added_tokens.end(),
              [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
  }
  return config;
}

}  // namespace seam
