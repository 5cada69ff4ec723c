// seam serve with a Jinja chat template (--chat-template FILE) over real HTTP:
// chat_template_kwargs and documents reach the template, a template that writes
// the BOS text is encoded without a second BOS, and a template's own
// raise_exception is a 400 carrying its message.
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

}  // namespace
}  // namespace seam
