// ChatTemplate: renders a chat conversation into prompt text the way Hugging
// Face's apply_chat_template renders it. A model's own Jinja template (in
// tokenizer_config.json or chat_template.jinja, or a file given to
// --chat-template) is rendered by seam's Jinja engine (jinja/), so any
// template renders as transformers renders it. The built-in families below are
// shortcuts by name (--chat-template llama-3 ...) and the fallback for models
// without a template (plain); from_jinja still recognises their fingerprints.
//
// Families (the names accepted by --chat-template):
//   llama-2    <s>[INST] <<SYS>>\nS\n<</SYS>>\n\nU [/INST] A </s><s>[INST] U [/INST]
//   llama-3    <|begin_of_text|><|start_header_id|>role<|end_header_id|>\n\nC<|eot_id|>...
//   llama-3.1  llama-3 with the always-present system block ("Cutting Knowledge Date...")
//   chatml     <|im_start|>role\nC<|im_end|>\n... (Qwen: with its default system message)
//   mistral    <s>[INST] U[/INST] A</s>[INST] S\n\nU[/INST] (system joins the last user turn)
//   plain      each message's content followed by "\n"; no roles, no generation
//              prompt (for base models such as stories260K that have no template).
//
// BOS: a rendered text that starts with the BOS token's text (the built-in
// llama-2, llama-3*, mistral, and any Jinja template that writes bos_token) is
// encoded without the tokenizer's own special tokens, so BOS is not doubled
// (what sglang and vLLM do); other texts are encoded with them.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace seam {

namespace jinja {
class HfChatTemplate;
}

struct ChatMessage {
  std::string role;  // system | user | assistant | tool
  std::string content;                  // the text (text parts joined by "\n")
  std::vector<std::string> text_parts;  // the content's text parts when it was given as parts
  bool content_null = false;            // content null or absent (an assistant turn of only tool calls)
  // Tool fields as the template sees them, in the request's order: tool_calls
  // (arguments as objects), tool_call_id, name. An empty object when none.
  nlohmann::ordered_json tool_fields = nlohmann::ordered_json::object();
};

enum class ChatFamily { plain, llama2, llama3, llama31, chatml, mistral, jinja };

class ChatTemplate {
 public:
  // The built-in template `name` (see above); throws seam::Error for an unknown name.
  static ChatTemplate from_name(const std::string& name, const std::string& bos_token, const std::string& eos_token);
  // The family of a Jinja template text by its fingerprints; nullopt when not recognised.
  static std::optional<ChatTemplate> from_jinja(const std::string& jinja, const std::string& bos_token,
                                                const std::string& eos_token);
  // A Jinja template text rendered by the engine, with the special tokens it
  // sees (an empty one is not passed); throws seam::Error when it does not parse.
  static ChatTemplate from_jinja_text(const std::string& jinja, const std::string& bos_token,
                                      const std::string& eos_token);
  // The template for a model folder: `override_spec` if given (a built-in
  // name above, a file holding a Jinja template, or the name of one of the
  // folder's named templates), else the folder's own template (chat_template.jinja,
  // or tokenizer_config.json's chat_template) rendered by the Jinja engine, else plain.
  // A template that does not parse throws seam::Error.
  static ChatTemplate for_model(const std::string& tokenizer_dir, const std::string& override_spec);

  // Renders the conversation; throws seam::Error for conversations the HF
  // template rejects (roles not alternating, a role it does not support; a
  // Jinja template's raise_exception message verbatim).
  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
  // The same with the request's `documents` (a list, or null) and extra template
  // variables (`chat_template_kwargs`, an object, e.g. enable_thinking); the
  // built-in families take neither and refuse them when given.
  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                     const nlohmann::json& documents, const nlohmann::json& template_kwargs) const;
  // The same with the request's `tools` (a list, or null), all in the request's
  // member order (ordered_json), as a template prints them; the built-in families take no tools.
  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                     const nlohmann::ordered_json& tools, const nlohmann::ordered_json& documents,
                     const nlohmann::ordered_json& template_kwargs) const;

  ChatFamily family() const { return family_; }
  const char* name() const;
  // True when the family's text starts with the BOS token (the built-in families).
  bool writes_bos() const;
  // True when `rendered` starts with the BOS token's text: encode it without special tokens.
  bool writes_bos(const std::string& rendered) const;
  // Token strings that end an assistant turn (e.g. "<|eot_id|>"); the server
  // adds the ones the tokenizer knows as stop ids of chat requests.
  std::vector<std::string> end_of_turn_tokens() const;

 private:
  ChatFamily family_ = ChatFamily::plain;
  std::string bos_token_;
  std::string eos_token_;
  std::string default_system_;  // chatml: the system message used when none is given
  std::string date_string_ = "26 Jul 2024";  // llama-3.1: HF's fallback date
  // mistral variants differ in spaces around [INST]/[/INST] and the assistant text.
  bool inst_space_ = true;       // "[INST] " rather than "[INST]"
  bool close_space_ = false;     // " [/INST]" rather than "[/INST]"
  bool assistant_space_ = true;  // " " + content + eos
  bool eos_space_ = false;       // content + eos + " "
  bool system_supported_ = true; // mistral v0.1 templates reject a system message
  std::shared_ptr<const jinja::HfChatTemplate> jinja_;  // family jinja: the model's own template
  std::string jinja_source_;                           // its text (for end_of_turn_tokens)
  // The template loops over a message's content (`for x in message['content']`): content
  // given as parts reaches it as the parts list; otherwise as one string (vLLM's "auto").
  bool iterates_content_ = false;
};

}  // namespace seam
