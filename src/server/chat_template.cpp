#include "server/chat_template.h"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <regex>

#include "core/error.h"
#include "jinja/hf_chat_template.h"
#include "tokenizer/tokenizer_config.h"

namespace seam {

namespace {

// Python's str.strip() / Jinja's |trim on ASCII whitespace.
std::string strip(const std::string& s) {
  const char* ws = " \t\n\r\f\v";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A quoted literal in the Jinja source, in either quote style.
bool has_literal(const std::string& jinja, const std::string& text) {
  return contains(jinja, "'" + text + "'") || contains(jinja, "\"" + text + "\"");
}

// ChatML templates with a built-in default system message (Qwen) write it as
// one literal '<|im_start|>system\n...<|im_end|>\n'; the Jinja source holds
// either the two characters backslash-n or a newline.
std::string chatml_default_system(const std::string& jinja) {
  for (const std::string head : {"<|im_start|>system\\n", "<|im_start|>system\n"}) {
    size_t pos = 0;
    while ((pos = jinja.find(head, pos)) != std::string::npos) {
      const size_t begin = pos + head.size();
      const size_t end = jinja.find("<|im_end|>", begin);
      if (end == std::string::npos) break;
      const std::string body = jinja.substr(begin, end - begin);
      if (!body.empty() && body.find_first_of("'\"{}+\\\n") == std::string::npos) return body;
      pos = begin;
    }
  }
  return "";
}

// HF defines strftime_now for templates (Llama 3.2) that print today's date.
std::string today_string() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%d %b %Y", &tm);
  return buf;
}

void check_alternation(const std::vector<ChatMessage>& loop, size_t first, const char* family) {
  for (size_t i = first; i < loop.size(); ++i) {
    const bool expect_user = (i - first) % 2 == 0;
    SEAM_CHECK((loop[i].role == "user") == expect_user,
               "messages: the ", family,
               " chat template needs roles alternating user/assistant/user/... after an optional first system "
               "message; message ",
               i, " has role '", loop[i].role, "'");
    SEAM_CHECK(loop[i].role == "user" || loop[i].role == "assistant", "messages: message ", i, " has role '",
               loop[i].role, "'; the ", family, " chat template supports user and assistant after the system message");
  }
}

}  // namespace

ChatTemplate ChatTemplate::from_name(const std::string& name, const std::string& bos, const std::string& eos) {
  ChatTemplate t;
  t.bos_token_ = bos;
  t.eos_token_ = eos;
  if (name == "plain") {
    t.family_ = ChatFamily::plain;
  } else if (name == "llama-2") {
    t.family_ = ChatFamily::llama2;
  } else if (name == "llama-3") {
    t.family_ = ChatFamily::llama3;
  } else if (name == "llama-3.1") {
    t.family_ = ChatFamily::llama31;
  } else if (name == "chatml") {
    t.family_ = ChatFamily::chatml;
  } else if (name == "mistral") {
    t.family_ = ChatFamily::mistral;
  } else {
    throw Error("--chat-template: '" + name +
                "' is neither a file nor one of llama-2, llama-3, llama-3.1, chatml, mistral, plain");
  }
  if (t.bos_token_.empty() && (t.family_ == ChatFamily::llama3 || t.family_ == ChatFamily::llama31))
    t.bos_token_ = "<|begin_of_text|>";
  if (t.bos_token_.empty() && (t.family_ == ChatFamily::llama2 || t.family_ == ChatFamily::mistral))
    t.bos_token_ = "<s>";
  if (t.eos_token_.empty() && (t.family_ == ChatFamily::llama2 || t.family_ == ChatFamily::mistral))
    t.eos_token_ = "</s>";
  return t;
}

std::optional<ChatTemplate> ChatTemplate::from_jinja(const std::string& jinja, const std::string& bos,
                                                     const std::string& eos) {
  std::optional<ChatTemplate> t;
  if (contains(jinja, "<|start_header_id|>")) {
    t = from_name(contains(jinja, "Cutting Knowledge Date") ? "llama-3.1" : "llama-3", bos, eos);
    if (contains(jinja, "strftime_now")) t->date_string_ = today_string();
  } else if (contains(jinja, "<|im_start|>")) {
    t = from_name("chatml", bos, eos);
    t->default_system_ = chatml_default_system(jinja);
  } else if (contains(jinja, "[INST]") && contains(jinja, "<<SYS>>")) {
    t = from_name("llama-2", bos, eos);
  } else if (contains(jinja, "[INST]")) {
    t = from_name("mistral", bos, eos);
    t->inst_space_ = has_literal(jinja, "[INST] ");
    t->close_space_ = has_literal(jinja, " [/INST]");
    t->assistant_space_ = contains(jinja, "' ' + message") || contains(jinja, "\" \" + message");
    t->eos_space_ = contains(jinja, "eos_token + ' '") || contains(jinja, "eos_token + \" \"");
    t->system_supported_ = contains(jinja, "system_message");
  }
  return t;
}

namespace {

// `{% for part in message['content'] %}` / `message.content`, with any loop and message names.
bool loops_over_content(const std::string& jinja) {
  static const std::regex pattern(R"(\{%[-+]?\s*for\s+\w+\s+in\s+\w+(\[\s*['"]content['"]\s*\]|\.content\b))");
  return std::regex_search(jinja, pattern);
}

bool is_builtin_name(const std::string& name) {
  for (const char* n : {"plain", "llama-2", "llama-3", "llama-3.1", "chatml", "mistral"})
    if (name == n) return true;
  return false;
}

}  // namespace

ChatTemplate ChatTemplate::from_jinja_text(const std::string& jinja, const std::string& bos_token,
                                           const std::string& eos_token) {
  ChatTemplate t;
  t.family_ = ChatFamily::jinja;
  t.bos_token_ = bos_token;
  t.eos_token_ = eos_token;
  try {
    t.jinja_ = std::make_shared<const jinja::HfChatTemplate>(jinja::HfChatTemplate::from_text(
        jinja, bos_token.empty() ? std::nullopt : std::optional<std::string>(bos_token),
        eos_token.empty() ? std::nullopt : std::optional<std::string>(eos_token), jinja::Options{}));
  } catch (const jinja::TemplateError& e) {
    throw Error(std::string("chat template: ") + e.what());
  }
  t.jinja_source_ = jinja;
  t.iterates_content_ = loops_over_content(jinja);
  return t;
}

ChatTemplate ChatTemplate::for_model(const std::string& tokenizer_dir, const std::string& override_spec) {
  const TokenizerConfig cfg = read_tokenizer_config(tokenizer_dir + "/tokenizer_config.json");
  // Everything but the built-in names goes to the Jinja engine: a file, a named
  // template of the folder, or the folder's own template.
  if (override_spec.empty() ? jinja::HfChatTemplate::folder_has_template(tokenizer_dir)
                            : !is_builtin_name(override_spec)) {
    ChatTemplate t;
    t.family_ = ChatFamily::jinja;
    auto hf = std::make_shared<const jinja::HfChatTemplate>(
        jinja::HfChatTemplate::from_folder(tokenizer_dir, override_spec, jinja::Options{}));
    t.bos_token_ = hf->bos_token().value_or("");
    t.eos_token_ = hf->eos_token().value_or("");
    t.jinja_source_ = hf->all_sources();
    t.iterates_content_ = loops_over_content(t.jinja_source_);
    t.jinja_ = std::move(hf);
    return t;
  }
  if (!override_spec.empty()) {
    if (!std::filesystem::is_regular_file(override_spec)) return from_name(override_spec, cfg.bos_token, cfg.eos_token);
    std::ifstream in(override_spec, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    auto t = from_jinja(ss.str(), cfg.bos_token, cfg.eos_token);
    SEAM_CHECK(t.has_value(), override_spec,
               ": not a chat template seam recognises (llama-2, llama-3, llama-3.1, chatml, mistral); "
               "pass one of those names to --chat-template");
    return *t;
  }
  const std::string path = tokenizer_dir + "/tokenizer_config.json";
  std::string jinja;
  if (cfg.present) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const auto j = nlohmann::json::parse(ss.str(), nullptr, false);
    if (j.is_object() && j.contains("chat_template")) {
      const auto& ct = j["chat_template"];
      if (ct.is_string()) {
        jinja = ct.get<std::string>();
      } else if (ct.is_array()) {  // [{name, template}]: the "default" one
        for (const auto& e : ct)
          if (e.is_object() && e.value("name", "") == "default" && e.contains("template") && e["template"].is_string())
            jinja = e["template"].get<std::string>();
      }
    }
  }
  // Newer transformers save the template beside the config instead.
  std::string where = path;
  if (jinja.empty() && std::filesystem::is_regular_file(tokenizer_dir + "/chat_template.jinja")) {
    where = tokenizer_dir + "/chat_template.jinja";
    std::ifstream in(where, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    jinja = ss.str();
  }
  if (jinja.empty()) return from_name("plain", cfg.bos_token, cfg.eos_token);
  auto t = from_jinja(jinja, cfg.bos_token, cfg.eos_token);
  SEAM_CHECK(t.has_value(), where,
             ": chat_template is not one seam recognises (llama-2, llama-3, llama-3.1, chatml, mistral); "
             "pass --chat-template NAME");
  return *t;
}

const char* ChatTemplate::name() const {
  switch (family_) {
    case ChatFamily::plain: return "plain";
    case ChatFamily::llama2: return "llama-2";
    case ChatFamily::llama3: return "llama-3";
    case ChatFamily::llama31: return "llama-3.1";
    case ChatFamily::chatml: return "chatml";
    case ChatFamily::mistral: return "mistral";
    case ChatFamily::jinja: return "jinja";
  }
  return "?";
}

bool ChatTemplate::writes_bos(const std::string& rendered) const {
  if (family_ != ChatFamily::jinja) return writes_bos();
  return !bos_token_.empty() && rendered.compare(0, bos_token_.size(), bos_token_) == 0;
}

bool ChatTemplate::writes_bos() const {
  return family_ == ChatFamily::llama2 || family_ == ChatFamily::llama3 || family_ == ChatFamily::llama31 ||
         family_ == ChatFamily::mistral;
}

std::vector<std::string> ChatTemplate::end_of_turn_tokens() const {
  switch (family_) {
    case ChatFamily::llama3:
    case ChatFamily::llama31: return {"<|eot_id|>"};
    case ChatFamily::chatml: return {"<|im_end|>"};
    case ChatFamily::jinja: {
      // The model's EOS, and the end-of-turn markers of the common families that its template writes.
      std::vector<std::string> tokens;
      if (!eos_token_.empty()) tokens.push_back(eos_token_);
      for (const char* marker : {"<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<end_of_turn>", "<|end|>",
                                 "<|endoftext|>", "<｜end▁of▁sentence｜>", "<|im_end|>", "</s>"})
        if (contains(jinja_source_, marker) &&
            std::find(tokens.begin(), tokens.end(), marker) == tokens.end())
          tokens.push_back(marker);
      return tokens;
    }
    default: return {};
  }
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                 const nlohmann::json& documents, const nlohmann::json& template_kwargs) const {
  // Through dump/parse: a json's members are already sorted; callers that need the request's order pass ordered_json.
  auto ordered = [](const nlohmann::json& j) {
    return j.is_null() ? nlohmann::ordered_json() : nlohmann::ordered_json::parse(j.dump());
  };
  return render(messages, add_generation_prompt, nlohmann::ordered_json(), ordered(documents), ordered(template_kwargs));
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                 const nlohmann::ordered_json& tools, const nlohmann::ordered_json& documents,
                                 const nlohmann::ordered_json& template_kwargs) const {
  if (family_ != ChatFamily::jinja) {
    SEAM_CHECK(documents.is_null(), "documents: the ", name(), " chat template takes no documents");
    SEAM_CHECK(template_kwargs.is_null() || template_kwargs.empty(), "chat_template_kwargs: the built-in ", name(),
               " chat template takes no template variables");
    SEAM_CHECK(tools.is_null(), "tools: the built-in ", name(),
               " chat template cannot render tools (use the model's own template or --chat-template FILE)");
    for (size_t i = 0; i < messages.size(); ++i)
      SEAM_CHECK(messages[i].tool_fields.empty() && messages[i].role != "tool", "messages[", i, "]: the built-in ",
                 name(), " chat template cannot render tool calls or tool results");
    return render(messages, add_generation_prompt);
  }
  jinja::ChatRequest request;
  for (const ChatMessage& m : messages) {
    nlohmann::ordered_json content = m.content;
    if (m.content_null) {
      content = nullptr;
    } else if (iterates_content_ && !m.text_parts.empty()) {
      content = nlohmann::ordered_json::array();
      for (const std::string& part : m.text_parts) content.push_back({{"type", "text"}, {"text", part}});
    }
    nlohmann::ordered_json message{{"role", m.role}, {"content", std::move(content)}};
    for (const auto& [key, value] : m.tool_fields.items()) message[key] = value;
    request.messages.push_back(std::move(message));
  }
  request.add_generation_prompt = add_generation_prompt;
  if (!tools.is_null()) {
    SEAM_CHECK(tools.is_array(), "tools: expected a list");
    request.tools = tools;
  }
  if (!documents.is_null()) {
    SEAM_CHECK(documents.is_array(), "documents: expected a list");
    request.documents = documents;
  }
  if (!template_kwargs.is_null()) {
    SEAM_CHECK(template_kwargs.is_object(), "chat_template_kwargs: expected an object");
    for (const char* reserved : {"messages", "tools", "documents", "add_generation_prompt"})
      SEAM_CHECK(!template_kwargs.contains(reserved), "chat_template_kwargs: \"", reserved,
                 "\" is set by the request itself");
    request.kwargs = template_kwargs;
  }
  return jinja_->render(request);
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  if (family_ == ChatFamily::jinja)
    return render(messages, add_generation_prompt, nlohmann::ordered_json(), nlohmann::ordered_json(),
                  nlohmann::ordered_json());
  SEAM_CHECK(!messages.empty(), "messages: the conversation is empty");
  std::string out;
  const bool has_system = messages[0].role == "system";
  switch (family_) {
    case ChatFamily::plain:
      for (const auto& m : messages) out += m.content + "\n";
      return out;

    case ChatFamily::llama2: {
      check_alternation(messages, has_system ? 1 : 0, "llama-2");
      for (size_t i = has_system ? 1 : 0, k = 0; i < messages.size(); ++i, ++k) {
        std::string content = messages[i].content;
        if (k == 0 && has_system) content = "<<SYS>>\n" + messages[0].content + "\n<</SYS>>\n\n" + content;
        if (messages[i].role == "user") {
          out += bos_token_ + "[INST] " + strip(content) + " [/INST]";
        } else {
          out += " " + strip(content) + " " + eos_token_;
        }
      }
      return out;
    }

    case ChatFamily::llama3:
      for (size_t i = 0; i < messages.size(); ++i) {
        if (i == 0) out += bos_token_;
        out += "<|start_header_id|>" + messages[i].role + "<|end_header_id|>\n\n" + strip(messages[i].content) +
               "<|eot_id|>";
      }
      if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      return out;

    case ChatFamily::llama31:
      out += bos_token_ + "<|start_header_id|>system<|end_header_id|>\n\n";
      out += "Cutting Knowledge Date: December 2023\nToday Date: " + date_string_ + "\n\n";
      out += (has_system ? strip(messages[0].content) : std::string()) + "<|eot_id|>";
      for (size_t i = has_system ? 1 : 0; i < messages.size(); ++i)
        out += "<|start_header_id|>" + messages[i].role + "<|end_header_id|>\n\n" + strip(messages[i].content) +
               "<|eot_id|>";
      if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      return out;

    case ChatFamily::chatml:
      if (!has_system && !default_system_.empty()) out += "<|im_start|>system\n" + default_system_ + "<|im_end|>\n";
      for (const auto& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
      if (add_generation_prompt) out += "<|im_start|>assistant\n";
      return out;

    case ChatFamily::mistral: {
      SEAM_CHECK(!has_system || system_supported_,
                 "messages: this mistral chat template supports only user and assistant roles (no system message)");
      const size_t first = has_system ? 1 : 0;
      check_alternation(messages, first, "mistral");
      out += bos_token_;
      const std::string open = inst_space_ ? "[INST] " : "[INST]";
      const std::string close = close_space_ ? " [/INST]" : "[/INST]";
      for (size_t i = first; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        if (m.role == "user") {
          const bool with_system = has_system && i + 1 == messages.size();
          out += open + (with_system ? messages[0].content + "\n\n" : std::string()) + m.content + close;
        } else {
          out += (assistant_space_ ? " " : "") + m.content + eos_token_ + (eos_space_ ? " " : "");
        }
      }
      return out;
    }
    case ChatFamily::jinja: break;  // rendered above
  }
  return out;
}

}  // namespace seam
