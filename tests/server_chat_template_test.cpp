// ChatTemplate: each built-in family renders a system+user+assistant+user
// conversation exactly as Hugging Face's apply_chat_template renders that
// family's Jinja template (the expected strings were produced by jinja2 with
// HF's settings: trim_blocks, lstrip_blocks, add_generation_prompt=True).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "server/chat_template.h"
#include "test_util.h"

namespace seam {
namespace {

// The Jinja sources as they appear in the models' tokenizer_config.json.
const char* k_llama2 = R"JINJA({% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\n' + system_message + '\n<</SYS>>\n\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %})JINJA";
const char* k_llama3 = R"JINJA({% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>

'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>

' }}{% endif %})JINJA";
const char* k_llama31 = R"JINJA({{- bos_token }}
{%- if custom_tools is defined %}
    {%- set tools = custom_tools %}
{%- endif %}
{%- if not tools_in_user_message is defined %}
    {%- set tools_in_user_message = true %}
{%- endif %}
{%- if not date_string is defined %}
    {%- set date_string = "26 Jul 2024" %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}

{#- This block extracts the system message, so we can slot it into the right place. #}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}

{#- System message + builtin tools #}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{%- if builtin_tools is defined or tools is not none %}
    {{- "Environment: ipython\n" }}
{%- endif %}
{{- "Cutting Knowledge Date: December 2023\n" }}
{{- "Today Date: " + date_string + "\n\n" }}
{{- system_message }}
{{- "<|eot_id|>" }}

{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
)JINJA";
const char* k_chatml = R"JINJA({% for message in messages %}{{'<|im_start|>' + message['role'] + '
' + message['content'] + '<|im_end|>' + '
'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant
' }}{% endif %})JINJA";
const char* k_qwen2 = R"JINJA({% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system
You are a helpful assistant.<|im_end|>
' }}{% endif %}{{'<|im_start|>' + message['role'] + '
' + message['content'] + '<|im_end|>' + '
'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant
' }}{% endif %})JINJA";
const char* k_mistral_v01 = R"JINJA({{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token + ' ' }}{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %})JINJA";
const char* k_mistral = R"JINJA({%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content'] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}

{{- bos_token }}
{%- for message in loop_messages %}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
        {{- raise_exception('After the optional system message, conversation roles must alternate user/assistant/user/assistant/...') }}
    {%- endif %}
    {%- if message['role'] == 'user' %}
        {%- if loop.last and system_message is defined %}
            {{- '[INST] ' + system_message + '\n\n' + message['content'] + '[/INST]' }}
        {%- else %}
            {{- '[INST] ' + message['content'] + '[/INST]' }}
        {%- endif %}
    {%- elif message['role'] == 'assistant' %}
        {{- ' ' + message['content'] + eos_token}}
    {%- else %}
        {{- raise_exception('Only user and assistant roles are supported, with the exception of an initial optional system message!') }}
    {%- endif %}
{%- endfor %}
)JINJA";

std::vector<ChatMessage> conversation(bool with_system) {
  std::vector<ChatMessage> m;
  if (with_system) m.push_back({"system", "You are terse."});
  m.push_back({"user", " Hi there "});
  m.push_back({"assistant", "Hello! How can I help?\n"});
  m.push_back({"user", "Tell me a story."});
  return m;
}

ChatTemplate detect(const char* jinja, const std::string& bos, const std::string& eos) {
  auto t = ChatTemplate::from_jinja(jinja, bos, eos);
  EXPECT_TRUE(t.has_value());
  return t.value_or(ChatTemplate::from_name("plain", bos, eos));
}

TEST(ChatTemplate, Llama2) {
  ChatTemplate t = detect(k_llama2, "<s>", "</s>");
  EXPECT_STREQ(t.name(), "llama-2");
  EXPECT_TRUE(t.writes_bos());
  EXPECT_EQ(t.render(conversation(true), true),
            "<s>[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\n Hi there [/INST] Hello! How can I help? </s><s>[INST] "
            "Tell me a story. [/INST]");
  EXPECT_EQ(t.render(conversation(false), true),
            "<s>[INST] Hi there [/INST] Hello! How can I help? </s><s>[INST] Tell me a story. [/INST]");
  EXPECT_EQ(ChatTemplate::from_name("llama-2", "", "").render(conversation(false), true),
            t.render(conversation(false), true));
}

TEST(ChatTemplate, Llama3) {
  ChatTemplate t = detect(k_llama3, "<|begin_of_text|>", "<|eot_id|>");
  EXPECT_STREQ(t.name(), "llama-3");
  EXPECT_EQ(t.render(conversation(true), true),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|><|start_header_id|>"
            "user<|end_header_id|>\n\nHi there<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello! How can "
            "I help?<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nTell me a story.<|eot_id|><|start_header_id|>"
            "assistant<|end_header_id|>\n\n");
  EXPECT_EQ(t.render(conversation(false), true),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|><|start_header_id|>"
            "assistant<|end_header_id|>\n\nHello! How can I help?<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n"
            "Tell me a story.<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(t.end_of_turn_tokens(), std::vector<std::string>{"<|eot_id|>"});
}

TEST(ChatTemplate, Llama31) {
  ChatTemplate t = detect(k_llama31, "<|begin_of_text|>", "<|eot_id|>");
  EXPECT_STREQ(t.name(), "llama-3.1");
  EXPECT_EQ(t.render(conversation(true), true),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December "
            "2023\nToday Date: 26 Jul 2024\n\nYou are terse.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi "
            "there<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello! How can I "
            "help?<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nTell me a "
            "story.<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(t.render(conversation(false), true),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December "
            "2023\nToday Date: 26 Jul 2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi "
            "there<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello! How can I "
            "help?<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nTell me a "
            "story.<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplate, ChatMl) {
  ChatTemplate t = detect(k_chatml, "", "<|im_end|>");
  EXPECT_STREQ(t.name(), "chatml");
  EXPECT_FALSE(t.writes_bos());
  EXPECT_EQ(t.render(conversation(true), true),
            "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\n Hi there <|im_end|>\n<|im_start|>"
            "assistant\nHello! How can I help?\n<|im_end|>\n<|im_start|>user\nTell me a story.<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(t.render(conversation(false), true),
            "<|im_start|>user\n Hi there <|im_end|>\n<|im_start|>assistant\nHello! How can I help?\n<|im_end|>\n"
            "<|im_start|>user\nTell me a story.<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(t.render(conversation(false), false),
            "<|im_start|>user\n Hi there <|im_end|>\n<|im_start|>assistant\nHello! How can I help?\n<|im_end|>\n"
            "<|im_start|>user\nTell me a story.<|im_end|>\n");
}

TEST(ChatTemplate, QwenDefaultSystem) {
  ChatTemplate t = detect(k_qwen2, "", "<|im_end|>");
  EXPECT_STREQ(t.name(), "chatml");
  EXPECT_EQ(t.render(conversation(true), true),
            "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\n Hi there <|im_end|>\n<|im_start|>"
            "assistant\nHello! How can I help?\n<|im_end|>\n<|im_start|>user\nTell me a story.<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(t.render(conversation(false), true),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n Hi there <|im_end|>\n"
            "<|im_start|>assistant\nHello! How can I help?\n<|im_end|>\n<|im_start|>user\nTell me a story.<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatTemplate, Mistral) {
  ChatTemplate t = detect(k_mistral, "<s>", "</s>");
  EXPECT_STREQ(t.name(), "mistral");
  EXPECT_EQ(t.render(conversation(true), true),
            "<s>[INST]  Hi there [/INST] Hello! How can I help?\n</s>[INST] You are terse.\n\nTell me a story.[/INST]");
  EXPECT_EQ(t.render(conversation(false), true),
            "<s>[INST]  Hi there [/INST] Hello! How can I help?\n</s>[INST] Tell me a story.[/INST]");
  EXPECT_EQ(ChatTemplate::from_name("mistral", "<s>", "</s>").render(conversation(true), true),
            t.render(conversation(true), true));
}

TEST(ChatTemplate, MistralV01RejectsSystem) {
  ChatTemplate t = detect(k_mistral_v01, "<s>", "</s>");
  EXPECT_STREQ(t.name(), "mistral");
  EXPECT_EQ(t.render(conversation(false), true),
            "<s>[INST]  Hi there  [/INST]Hello! How can I help?\n</s> [INST] Tell me a story. [/INST]");
  EXPECT_THROW(t.render(conversation(true), true), Error);
}

TEST(ChatTemplate, Plain) {
  ChatTemplate t = ChatTemplate::from_name("plain", "<s>", "</s>");
  EXPECT_FALSE(t.writes_bos());
  EXPECT_EQ(t.render(conversation(true), true),
            "You are terse.\n Hi there \nHello! How can I help?\n\nTell me a story.\n");
}

TEST(ChatTemplate, RolesMustAlternate) {
  for (const char* name : {"llama-2", "mistral"}) {
    ChatTemplate t = ChatTemplate::from_name(name, "<s>", "</s>");
    EXPECT_THROW(t.render({{"user", "a"}, {"user", "b"}}, true), Error) << name;
    EXPECT_THROW(t.render({{"assistant", "a"}}, true), Error) << name;
    EXPECT_THROW(t.render({{"user", "a"}, {"assistant", "b"}, {"system", "c"}}, true), Error) << name;
  }
  EXPECT_THROW(ChatTemplate::from_name("plain", "", "").render({}, true), Error);
}

TEST(ChatTemplate, UnknownNameAndTemplate) {
  EXPECT_THROW(ChatTemplate::from_name("vicuna", "", ""), Error);
  EXPECT_FALSE(ChatTemplate::from_jinja("{{ messages[0]['content'] }}", "", "").has_value());
}

TEST(ChatTemplate, ForModel) {
  // stories260K has no chat_template: plain.
  EXPECT_STREQ(ChatTemplate::for_model(test::stories_dir(), "").name(), "plain");
  EXPECT_STREQ(ChatTemplate::for_model(test::stories_dir(), "llama-2").name(), "llama-2");
  // The model's own template is rendered by the Jinja engine, as transformers renders it.
  const std::string dir = test::make_temp_dir("chat_template");
  test::write_file(dir + "/tokenizer_config.json",
                   nlohmann::json({{"bos_token", "<|begin_of_text|>"}, {"chat_template", k_llama3}}).dump());
  ChatTemplate t = ChatTemplate::for_model(dir, "");
  EXPECT_STREQ(t.name(), "jinja");
  const std::string expected =
      "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nx<|eot_id|><|start_header_id|>assistant<|"
      "end_header_id|>\n\n";
  EXPECT_EQ(t.render({{"user", "x"}}, true), expected);
  EXPECT_TRUE(t.writes_bos(expected));
  EXPECT_EQ(t.end_of_turn_tokens(), std::vector<std::string>{"<|eot_id|>"});
  // The built-in names stay shortcuts, and render the same text.
  EXPECT_STREQ(ChatTemplate::for_model(dir, "llama-3").name(), "llama-3");
  EXPECT_EQ(ChatTemplate::for_model(dir, "llama-3").render({{"user", "x"}}, true), expected);
  // A template file given to --chat-template.
  test::write_file(dir + "/t.jinja", k_chatml);
  ChatTemplate from_file = ChatTemplate::for_model(dir, dir + "/t.jinja");
  EXPECT_STREQ(from_file.name(), "jinja");
  EXPECT_EQ(from_file.render(conversation(false), true), detect(k_chatml, "", "<|im_end|>").render(conversation(false), true));
  test::write_file(dir + "/bad.jinja", "{% if messages %}");
  EXPECT_THROW(ChatTemplate::for_model(dir, dir + "/bad.jinja"), Error);
  EXPECT_THROW(ChatTemplate::for_model(dir, dir + "/missing.jinja"), Error);
  // Any template in the model folder renders (no fingerprint needed).
  test::write_file(dir + "/tokenizer_config.json", nlohmann::json({{"chat_template", "{{ messages[0].content }}!"}}).dump());
  EXPECT_EQ(ChatTemplate::for_model(dir, "").render({{"user", "x"}}, true), "x!");
  EXPECT_STREQ(ChatTemplate::for_model(dir, "plain").name(), "plain");
  // A template saved as chat_template.jinja beside a config without one.
  test::write_file(dir + "/tokenizer_config.json", nlohmann::json({{"bos_token", "<s>"}, {"eos_token", "</s>"}}).dump());
  test::write_file(dir + "/chat_template.jinja", k_mistral);
  ChatTemplate m = ChatTemplate::for_model(dir, "");
  EXPECT_EQ(m.render(conversation(true), true), detect(k_mistral, "<s>", "</s>").render(conversation(true), true));
}

// Gemma's template was refused at start-up before the engine; it now renders,
// and its raise_exception message is the error (the server's 400).
const char* k_gemma = R"JINJA({{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '
' + message['content'] | trim + '<end_of_turn>
' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model
'}}{% endif %})JINJA";

TEST(ChatTemplate, JinjaTemplatesRenderWithTheEngine) {
  ChatTemplate t = ChatTemplate::from_jinja_text(k_gemma, "<bos>", "<eos>");
  EXPECT_EQ(t.render(conversation(false), true),
            "<bos><start_of_turn>user\nHi there<end_of_turn>\n<start_of_turn>model\nHello! How can I help?<end_of_turn>\n"
            "<start_of_turn>user\nTell me a story.<end_of_turn>\n<start_of_turn>model\n");
  try {
    t.render(conversation(true), true);
    FAIL() << "a system message rendered";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "System role not supported");
  }
  const std::vector<std::string> eot = t.end_of_turn_tokens();
  EXPECT_EQ(eot, (std::vector<std::string>{"<eos>", "<end_of_turn>"}));
  EXPECT_FALSE(t.writes_bos("<start_of_turn>"));  // a text without the BOS text gets the tokenizer's own
}

TEST(ChatTemplate, TextPartsReachATemplateThatLoopsOverContent) {
  // A template that loops over the content gets the parts; one that does not gets the joined text.
  ChatTemplate parts = ChatTemplate::from_jinja_text(
      "{% for m in messages %}{% if m.content is string %}{{ m.content }}{% else %}"
      "{%- for block in m['content'] %}[{{ block.text }}]{% endfor %}{% endif %}{% endfor %}",
      "", "");
  ChatTemplate text = ChatTemplate::from_jinja_text("{% for m in messages %}{{ m.content }}{% endfor %}", "", "");
  const std::vector<ChatMessage> m = {{"user", "a\nb", {"a", "b"}}, {"assistant", "c", {}}};
  EXPECT_EQ(parts.render(m, false), "[a][b]c");
  EXPECT_EQ(text.render(m, false), "a\nbc");
}

TEST(ChatTemplate, KwargsAndDocumentsReachTheTemplate) {
  ChatTemplate t = ChatTemplate::from_jinja_text(
      "{% if enable_thinking is defined and enable_thinking is false %}<no_think>{% endif %}"
      "{% for d in documents or [] %}[{{ d.title }}]{% endfor %}{{ messages[-1].content }}",
      "", "");
  const std::vector<ChatMessage> m = {{"user", "q"}};
  EXPECT_EQ(t.render(m, true, nlohmann::json(), nlohmann::json{{"enable_thinking", false}}), "<no_think>q");
  EXPECT_EQ(t.render(m, true, nlohmann::json::parse(R"([{"title": "A"}, {"title": "B"}])"), nlohmann::json::object()),
            "[A][B]q");
  EXPECT_THROW(t.render(m, true, nlohmann::json(), nlohmann::json{{"messages", 1}}), Error);
  // The built-in families have no variables to take: refused rather than ignored.
  ChatTemplate chatml = ChatTemplate::from_name("chatml", "", "");
  EXPECT_THROW(chatml.render(m, true, nlohmann::json(), nlohmann::json{{"enable_thinking", false}}), Error);
  EXPECT_EQ(chatml.render(m, true, nlohmann::json(), nlohmann::json::object()), chatml.render(m, true));
}

// The families' Hub templates (tests/data/chat_templates) in a model folder, as
// tokenizer_config.json's chat_template or as chat_template.jinja: for_model picks
// the folder's template and renders the server's messages (string content, or text
// parts for a template that loops over content) as transformers rendered the golden,
// with the family's end-of-turn marker among the stop tokens; Gemma's assistant turns
// render as its `model` role.
struct FamilyFolder {
  const char* golden;
  const char* end_of_turn;
};

std::vector<ChatMessage> server_messages(const nlohmann::ordered_json& messages) {
  std::vector<ChatMessage> out;
  for (const auto& m : messages) {
    ChatMessage message{m["role"].get<std::string>(), ""};
    if (m["content"].is_string()) {
      message.content = m["content"].get<std::string>();
    } else {
      for (const auto& part : m["content"]) message.text_parts.push_back(part["text"].get<std::string>());
      for (size_t i = 0; i < message.text_parts.size(); ++i)
        message.content += (i ? "\n" : "") + message.text_parts[i];
    }
    out.push_back(std::move(message));
  }
  return out;
}

TEST(ChatTemplate, FamilyFoldersRenderTheirHubTemplate) {
  const FamilyFolder families[] = {{"google__gemma-3-4b-it.json", "<end_of_turn>"},
                                   {"microsoft__Phi-4-mini-instruct.json", "<|end|>"},
                                   {"mistralai__Mistral-7B-Instruct-v0.1.json", "</s>"}};
  for (const FamilyFolder& family : families) {
    const auto golden = nlohmann::ordered_json::parse(
        test::read_file(std::string(SEAM_SOURCE_DIR) + "/tests/data/chat_templates/" + family.golden));
    // Where transformers keeps the template: the tokenizer's config, chat_template.jinja beside
    // it, or a processor's chat_template.json (multimodal folders such as Gemma 3's).
    for (const std::string where : {"tokenizer_config.json", "chat_template.jinja", "chat_template.json"}) {
      SCOPED_TRACE(std::string(family.golden) + " in " + where);
      const std::string dir = test::make_temp_dir("family_template");
      nlohmann::ordered_json config = {{"bos_token", golden["bos_token"]}, {"eos_token", golden["eos_token"]}};
      if (where == "chat_template.jinja")
        test::write_file(dir + "/chat_template.jinja", golden["template"].get<std::string>());
      else if (where == "chat_template.json")
        test::write_file(dir + "/chat_template.json", nlohmann::ordered_json{{"chat_template", golden["template"]}}.dump());
      else
        config["chat_template"] = golden["template"];
      test::write_file(dir + "/tokenizer_config.json", config.dump());
      const ChatTemplate t = ChatTemplate::for_model(dir, "");
      EXPECT_STREQ(t.name(), "jinja");
      const auto eot = t.end_of_turn_tokens();
      EXPECT_NE(std::find(eot.begin(), eot.end(), family.end_of_turn), eot.end());
      int n_checked = 0;
      for (const auto& c : golden["cases"]) {
        const std::string id = c["id"].get<std::string>();
        if (id != "single_user" && id != "multi_turn" && id != "system_user" && id != "content_parts_all") continue;
        const auto messages = server_messages(c["messages"]);
        if (c["expect_error"].get<bool>() && id == "content_parts_all") {
          // A template that reads content as a string gets the text parts joined (vLLM's "auto"),
          // where transformers would fail on the list: the server renders what the client meant.
          EXPECT_NO_THROW(t.render(messages, c["add_generation_prompt"].get<bool>())) << id;
        } else if (c["expect_error"].get<bool>()) {
          EXPECT_THROW(t.render(messages, c["add_generation_prompt"].get<bool>()), Error) << id;
        } else {
          EXPECT_EQ(t.render(messages, c["add_generation_prompt"].get<bool>()), c["expected"].get<std::string>())
              << id;
        }
        ++n_checked;
      }
      EXPECT_EQ(n_checked, 4);
    }
  }
  // A chat_template.json that is not {"chat_template": str} is an error naming the file; one
  // without a template leaves the folder without one (plain).
  const std::string bad = test::make_temp_dir("family_template_bad");
  test::write_file(bad + "/chat_template.json", "[1]");
  try {
    ChatTemplate::for_model(bad, "");
    ADD_FAILURE() << "a malformed chat_template.json was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("chat_template.json"), std::string::npos) << e.what();
  }
  test::write_file(bad + "/chat_template.json", "{\"chat_template\": null}");
  EXPECT_STREQ(ChatTemplate::for_model(bad, "").name(), "plain");
  // Gemma 3: the system message joins the first user turn, the assistant is the `model` role.
  ChatTemplate gemma3 = ChatTemplate::from_jinja_text(
      test::read_file(std::string(SEAM_SOURCE_DIR) + "/tests/data/chat_templates/templates/google__gemma-3-4b-it.jinja"),
      "<bos>", "<eos>");
  EXPECT_EQ(gemma3.render(conversation(true), true),
            "<bos><start_of_turn>user\nYou are terse.\n\nHi there<end_of_turn>\n<start_of_turn>model\nHello! How can I "
            "help?<end_of_turn>\n<start_of_turn>user\nTell me a story.<end_of_turn>\n<start_of_turn>model\n");
}

}  // namespace
}  // namespace seam
