// seam serve with a Jinja chat template (--chat-template FILE) over real HTTP:
// chat_template_kwargs and documents reach the template, a template that writes
// the BOS text is encoded without a second BOS, and a template's own
// raise_exception is a 400 carrying its message. And seam serve with a tokenizer
// folder whose tokenizer_config.json holds Gemma 3's Hub template: the folder's
// template renders the chat (system folded into the first user turn, the assistant
// as Gemma's `model` role, text parts reaching the template as parts).
#include <gtest/gtest.h>

#include "bench_serving/http_client.h"
#include <nlohmann/json.hpp>

#include "server_process.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace seam {
namespace {

using json = nlohmann::json;

const char* k_template =
    "{{ bos_token }}{% for m in messages %}"
    "{% if m.role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
    "{{ m.content }}{% endfor %}"
    "{% for d in documents or [] %} {{ d.text }}{% endfor %}"
    "{% if greeting is defined %} {{ greeting }}{% endif %}";

class ServerJinjaChat : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string dir = test::make_temp_dir("jinja_chat");
    test::write_file(dir + "/chat.jinja", k_template);
    server_ = new test::ServerProcess({"--chat-template", dir + "/chat.jinja"});
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static HttpResult chat(const json& body) {
    HttpClient cli("127.0.0.1", server_->port());
    cli.set_read_timeout(120, 0);
    return cli.Post("/v1/chat/completions", body.dump(), "application/json");
  }
  static test::ServerProcess* server_;
};

test::ServerProcess* ServerJinjaChat::server_ = nullptr;

TEST_F(ServerJinjaChat, KwargsAndDocumentsShapeThePromptWithOneBos) {
  const auto tok = load_tokenizer(test::stories_dir());
  auto res = chat({{"messages", {{{"role", "user"}, {"content", "Once upon a time"}}}},
                   {"chat_template_kwargs", {{"greeting", "there was"}}},
                   {"documents", {{{"text", "a cat"}}}},
                   {"max_tokens", 1},
                   {"temperature", 0}});
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json j = json::parse(res->body);
  // The template writes "<s>" itself: the text is encoded without the tokenizer's BOS.
  const std::string text = "<s>Once upon a time a cat there was";
  EXPECT_EQ(j["usage"]["prompt_tokens"].get<size_t>(), tok->encode(text, false).size());
  EXPECT_NE(tok->encode(text, false).size(), tok->encode(text, true).size());
}

TEST_F(ServerJinjaChat, ATemplateErrorIsA400WithItsMessage) {
  auto res = chat({{"messages", {{{"role", "system"}, {"content", "x"}}, {{"role", "user"}, {"content", "y"}}}}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
  const json j = json::parse(res->body);
  EXPECT_EQ(j["error"]["message"], "System role not supported") << res->body;
  auto bad = chat({{"messages", {{{"role", "user"}, {"content", "y"}}}}, {"chat_template_kwargs", "no"}});
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(json::parse(bad->body)["error"]["param"], "chat_template_kwargs") << bad->body;
  // The server keeps serving.
  auto ok = chat({{"messages", {{{"role", "user"}, {"content", "y"}}}}, {"max_tokens", 1}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

// A tokenizer folder: stories260K's SentencePiece model and its tokenizer_config.json with
// Gemma 3's Hub chat template (tests/data/chat_templates) added.
std::string gemma3_tokenizer_folder() {
  const std::string dir = test::make_temp_dir("gemma3_tokenizer");
  test::write_file(dir + "/tokenizer.model", test::read_file(test::stories_dir() + "/tokenizer.model"));
  json config = json::parse(test::read_file(test::stories_dir() + "/tokenizer_config.json"));
  config["chat_template"] = test::read_file(std::string(SEAM_SOURCE_DIR) +
                                            "/tests/data/chat_templates/templates/google__gemma-3-4b-it.jinja");
  test::write_file(dir + "/tokenizer_config.json", config.dump());
  return dir;
}

TEST(ServerFolderChatTemplate, Gemma3TemplateFromTheTokenizerFolderShapesThePrompt) {
  const std::string dir = gemma3_tokenizer_folder();
  test::ServerProcess server({"--tokenizer-path", dir});
  HttpClient cli("127.0.0.1", server.port());
  cli.set_read_timeout(120, 0);
  const json messages = json::parse(R"([
    {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
    {"role": "user", "content": "Once upon a time"},
    {"role": "assistant", "content": " there was a cat. "},
    {"role": "user", "content": [{"type": "text", "text": "And then?"}]}])");
  auto res = cli.Post("/v1/chat/completions",
                      json{{"messages", messages}, {"max_tokens", 1}, {"temperature", 0}}.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  // As transformers renders it (the golden's rules): bos_token "<s>" from the config opens the
  // text, so it is encoded without a second BOS.
  const std::string text =
      "<s><start_of_turn>user\nBe brief.\n\nOnce upon a time<end_of_turn>\n<start_of_turn>model\nthere was a "
      "cat.<end_of_turn>\n<start_of_turn>user\nAnd then?<end_of_turn>\n<start_of_turn>model\n";
  const auto tok = load_tokenizer(dir);
  EXPECT_EQ(json::parse(res->body)["usage"]["prompt_tokens"].get<size_t>(), tok->encode(text, false).size());
  // Roles must alternate: the template's own message is the 400.
  auto bad = cli.Post("/v1/chat/completions",
                      json{{"messages", {{{"role", "user"}, {"content", "a"}}, {{"role", "user"}, {"content", "b"}}}}}
                          .dump(),
                      "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400) << bad->body;
  EXPECT_EQ(json::parse(bad->body)["error"]["message"], "Conversation roles must alternate user/assistant/user/assistant/...")
      << bad->body;
}

}  // namespace
}  // namespace seam
