// ChatTemplate: renders a chat conversation into prompt text the way Hugging
// Face's apply_chat_template renders the `chat_template` of the common model
// families. seam has no Jinja interpreter: the template text of
// tokenizer_config.json is recognised by substring fingerprints and rendered
// by built-in C++ code that reproduces HF's output byte for byte for
// system/user/assistant messages with string content.
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
// BOS: templates that write the BOS token as text (llama-2, llama-3*, mistral)
// are encoded without the tokenizer's own special tokens, so BOS is not doubled
// (what sglang and vLLM do); the others (chatml, plain) are encoded with them.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace seam {

struct ChatMessage {
  std::string role;  // system | user | assistant
  std::string content;
};

enum class ChatFamily { plain, llama2, llama3, llama31, chatml, mistral };

class ChatTemplate {
 public:
  // The built-in template `name` (see above); throws seam::Error for an unknown name.
  static ChatTemplate from_name(const std::string& name, const std::string& bos_token, const std::string& eos_token);
  // The family of a Jinja template text by its fingerprints; nullopt when not recognised.
  static std::optional<ChatTemplate> from_jinja(const std::string& jinja, const std::string& bos_token,
                                                const std::string& eos_token);
  // The template for a model folder: `override_spec` (a name, or a file holding
  // a Jinja template) if given, else the chat_template of
  // `tokenizer_dir`/tokenizer_config.json (or chat_template.jinja), else plain.
  // A template that is present but not recognised throws seam::Error (name the
  // family with --chat-template).
  static ChatTemplate for_model(const std::string& tokenizer_dir, const std::string& override_spec);

  // Renders the conversation; throws seam::Error for conversations the HF
  // template rejects (roles not alternating, a role it does not support).
  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;

  ChatFamily family() const { return family_; }
  const char* name() const;
  // True when the rendered text starts with the BOS token (encode it without special tokens).
  bool writes_bos() const;
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
};

}  // namespace seam
