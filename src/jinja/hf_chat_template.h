// HfChatTemplate: Hugging Face transformers' apply_chat_template(...,
// tokenize=False) on top of the Jinja engine: where a model folder keeps its
// template, which of several named templates applies, and the variables a
// template is rendered with.
//
// Sources (as transformers loads them): chat_template.jinja in the folder, else
// tokenizer_config.json's chat_template, a string or a list of {name, template}
// (then "tool_use" when tools are given and present, else "default"), else the
// processor's chat_template.json (multimodal models keep it there).
// Variables: messages, tools and documents (None when absent), add_generation_prompt,
// bos_token / eos_token from the config (strings or {"content": ...}; absent
// when null), and the request's extra kwargs (enable_thinking, date_string, ...).
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "jinja/template.h"

namespace seam::jinja {

// One conversation to render (the JSON-lines request of `seam chat-template`,
// and what the server builds from a chat request).
struct ChatRequest {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;      // null: no tools
  nlohmann::ordered_json documents;  // null: no documents
  bool add_generation_prompt = false;
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();  // extra template variables

  // From {"messages", "tools", "documents", "add_generation_prompt", "kwargs"};
  // throws seam::Error naming the field that is malformed.
  // (Parse it with ordered_json: member order is the order a template sees.)
  static ChatRequest from_json(const nlohmann::ordered_json& j);
};

class HfChatTemplate {
 public:
  // The templates of `dir` (see above). `override_spec`, when not empty, is a
  // file holding a template, or the name of one of the folder's named templates.
  // Throws seam::Error when the folder has no template, or one does not parse.
  static HfChatTemplate from_folder(const std::string& dir, const std::string& override_spec, const Options& options);
  // True when `dir` has a template (chat_template.jinja, a non-null chat_template in
  // tokenizer_config.json, or chat_template.json); false when it has none.
  static bool folder_has_template(const std::string& dir);
  // A single template text with the given special tokens (nullopt: not passed).
  static HfChatTemplate from_text(const std::string& text, std::optional<std::string> bos_token,
                                  std::optional<std::string> eos_token, const Options& options);

  // Throws TemplateError (a raise_exception in the template: its message verbatim).
  std::string render(const ChatRequest& request) const;

  // The template text that `request` is rendered with (the named one it selects).
  const std::string& source_for(const ChatRequest& request) const;
  // All template texts, concatenated (for scanning what markers a template writes).
  std::string all_sources() const;
  const std::optional<std::string>& bos_token() const { return bos_token_; }
  const std::optional<std::string>& eos_token() const { return eos_token_; }

 private:
  const Template& select(const ChatRequest& request) const;

  std::map<std::string, Template> templates_;  // "" for a single unnamed template
  std::map<std::string, std::string> sources_;
  std::optional<std::string> bos_token_;
  std::optional<std::string> eos_token_;
};

}  // namespace seam::jinja
