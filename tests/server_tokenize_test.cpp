// POST /tokenize and /detokenize over HTTP on stories260K (vLLM's shapes):
// the ids are the ones a completion is fed (usage.prompt_tokens agrees, for
// text and for messages), detokenize inverts tokenize, every bad body is a
// 4xx with an OpenAI error body naming the field, and with --api-key the two
// routes stay open as in vLLM while /v1/* needs the key.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "bench_serving/http_client.h"
#include "server_process.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace seam {
namespace {

using json = nlohmann::json;

constexpr const char* k_key = "tok-key";

class ServerTokenize : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new test::ServerProcess({"--served-model-name", "stories", "--api-key", k_key});
    tok_ = load_tokenizer(test::stories_dir()).release();
  }
  static void TearDownTestSuite() {
    delete server_;
    delete tok_;
    server_ = nullptr;
    tok_ = nullptr;
  }
  // POST without the key (the tokenizer routes are open); /v1/* with it.
  static HttpResult post(const std::string& path, const std::string& body,
                         const std::string& type = "application/json") {
    HttpClient cli("127.0.0.1", server_->port());
    cli.set_read_timeout(60);
    if (path.rfind("/v1/", 0) == 0) cli.set_header("Authorization", std::string("Bearer ") + k_key);
    return cli.Post(path, body, type);
  }
  static json ok(const std::string& path, const json& body) {
    auto res = post(path, body.dump());
    EXPECT_TRUE(res) << res.error();
    EXPECT_EQ(res->status, 200) << path << " " << body.dump() << " -> " << res->body;
    return json::parse(res->body, nullptr, false);
  }
  static test::ServerProcess* server_;
  static Tokenizer* tok_;
};
test::ServerProcess* ServerTokenize::server_ = nullptr;
Tokenizer* ServerTokenize::tok_ = nullptr;

TEST_F(ServerTokenize, PromptGivesTheIdsACompletionIsFed) {
  const std::string text = "Once upon a time, there was a little dog.";
  const json t = ok("/tokenize", {{"prompt", text}});
  ASSERT_TRUE(t.contains("tokens") && t["tokens"].is_array()) << t.dump();
  const auto ids = t["tokens"].get<std::vector<int32_t>>();
  EXPECT_EQ(ids, tok_->encode(text, true));
  EXPECT_EQ(t["count"], ids.size());
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids[0], tok_->bos_id());
  EXPECT_FALSE(t.contains("token_strs"));

  // return_token_strs: each id's vocabulary string, which maps back to the id.
  const json s = ok("/tokenize", {{"prompt", text}, {"return_token_strs", true}});
  EXPECT_EQ(s["tokens"], t["tokens"]);
  ASSERT_TRUE(s["token_strs"].is_array() && s["token_strs"].size() == ids.size()) << s.dump();
  EXPECT_EQ(s["token_strs"][0], "<s>");
  EXPECT_EQ(s["token_strs"][1].get<std::string>().rfind("\xe2\x96\x81", 0), 0u);  // SentencePiece's space mark
  for (size_t i = 0; i < ids.size(); ++i)
    EXPECT_EQ(tok_->token_to_id(s["token_strs"][i].get<std::string>()), ids[i]) << i;

  // max_model_len is the one /v1/models reports.
  HttpClient cli("127.0.0.1", server_->port());
  cli.set_header("Authorization", std::string("Bearer ") + k_key);
  auto models = cli.Get("/v1/models");
  ASSERT_TRUE(models);
  const json m = json::parse(models->body)["data"][0];
  EXPECT_EQ(t["max_model_len"], m["max_model_len"]);
  EXPECT_GT(m["max_model_len"].get<int>(), 0);

  // The same text as a completion: usage counts the same tokens.
  const json c = ok("/v1/completions", {{"prompt", text}, {"max_tokens", 1}, {"temperature", 0}});
  EXPECT_EQ(c["usage"]["prompt_tokens"], t["count"]) << c.dump();

  // add_special_tokens: false drops BOS, on both routes alike.
  const json nb = ok("/tokenize", {{"prompt", text}, {"add_special_tokens", false}});
  EXPECT_EQ(nb["tokens"].get<std::vector<int32_t>>(), std::vector<int32_t>(ids.begin() + 1, ids.end()));
  const json cnb =
      ok("/v1/completions", {{"prompt", text}, {"max_tokens", 1}, {"temperature", 0}, {"add_special_tokens", false}});
  EXPECT_EQ(cnb["usage"]["prompt_tokens"], nb["count"]) << cnb.dump();
}

TEST_F(ServerTokenize, MessagesAreRenderedAsChatCompletionsRenderThem) {
  const json messages = {{{"role", "system"}, {"content", "Be kind."}},
                         {{"role", "user"}, {"content", "Tell me about the little dog."}}};
  const json t = ok("/tokenize", {{"messages", messages}, {"model", "stories"}});
  const auto ids = t["tokens"].get<std::vector<int32_t>>();
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(t["count"], ids.size());
  // One BOS, at the start: never doubled.
  EXPECT_EQ(ids[0], tok_->bos_id());
  EXPECT_EQ(std::count(ids.begin(), ids.end(), tok_->bos_id()), 1);
  // The text is the conversation (the model has no template: plain, a line per message).
  EXPECT_EQ(ids, tok_->encode("Be kind.\nTell me about the little dog.\n", true));

  const json c = ok("/v1/chat/completions", {{"messages", messages}, {"max_tokens", 1}, {"temperature", 0}});
  EXPECT_EQ(c["usage"]["prompt_tokens"], t["count"]) << c.dump();

  // Content given as text parts renders as the same text.
  const json parts = {{{"role", "system"}, {"content", "Be kind."}},
                      {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "Tell me about the little dog."}}}}}};
  EXPECT_EQ(ok("/tokenize", {{"messages", parts}})["tokens"], t["tokens"]);
}

// continue_final_message (transformers' rule): the prompt ends inside the last
// message, without the template's end of turn, on /tokenize and chat alike.
TEST_F(ServerTokenize, ContinueFinalMessageEndsThePromptInsideIt) {
  const json messages = {{{"role", "user"}, {"content", "Tell me a story."}},
                         {{"role", "assistant"}, {"content", "Once upon a"}}};
  const json t = ok("/tokenize", {{"messages", messages}, {"continue_final_message", true}});
  // Plain renders a line per message; the cut drops the final "\n".
  EXPECT_EQ(t["tokens"].get<std::vector<int32_t>>(), tok_->encode("Tell me a story.\nOnce upon a", true));
  const json whole = ok("/tokenize", {{"messages", messages}});
  EXPECT_EQ(whole["tokens"].get<std::vector<int32_t>>(), tok_->encode("Tell me a story.\nOnce upon a\n", true));
  const json c = ok("/v1/chat/completions",
                    {{"messages", messages}, {"continue_final_message", true}, {"max_tokens", 1}, {"temperature", 0}});
  EXPECT_EQ(c["usage"]["prompt_tokens"], t["count"]) << c.dump();
}

TEST_F(ServerTokenize, DetokenizeInvertsTokenize) {
  for (const std::string text : {"Once upon a time", "The cat sat. The dog ran!", "Lily said: \"no\".\nThen she left."}) {
    const json t = ok("/tokenize", {{"prompt", text}, {"add_special_tokens", false}});
    const json d = ok("/detokenize", {{"tokens", t["tokens"]}});
    EXPECT_EQ(d, json({{"prompt", text}})) << text;
  }
  // With BOS: the text the tokenizer decodes it to (special tokens kept, as vLLM).
  const std::vector<int32_t> with_bos = tok_->encode("Hello", true);
  EXPECT_EQ(ok("/detokenize", {{"tokens", with_bos}, {"model", "stories"}})["prompt"], tok_->decode(with_bos, false));
  EXPECT_EQ(ok("/detokenize", {{"tokens", json::array()}})["prompt"], "");
}

struct BadCase {
  const char* path;
  std::string body;
  int status;
  const char* param;  // "" for null
};

TEST_F(ServerTokenize, BadBodiesAre4xxNamingTheField) {
  const int vocab = tok_->vocab_size();
  const std::vector<BadCase> cases = {
      {"/tokenize", "{\"prompt\": \"x\"", 400, ""},
      {"/tokenize", "[1]", 400, ""},
      {"/tokenize", "{}", 400, "prompt"},
      {"/tokenize", "{\"prompt\": 5}", 400, "prompt"},
      {"/tokenize", "{\"prompt\": [1, 2]}", 400, "prompt"},
      {"/tokenize", "{\"prompt\": \"x\", \"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}", 400, "messages"},
      {"/tokenize", "{\"prompt\": \"x\", \"add_special_tokens\": \"yes\"}", 400, "add_special_tokens"},
      {"/tokenize", "{\"prompt\": \"x\", \"add_generation_prompt\": true}", 400, "add_generation_prompt"},
      {"/tokenize", "{\"prompt\": \"x\", \"temperature\": 1}", 400, "temperature"},
      {"/tokenize", "{\"prompt\": \"x\", \"return_token_strs\": 1}", 400, "return_token_strs"},
      {"/tokenize", "{\"prompt\": \"x\", \"model\": \"gpt-4\"}", 404, "model"},
      {"/tokenize", "{\"messages\": []}", 400, "messages"},
      {"/tokenize", "{\"messages\": [{\"role\": \"robot\", \"content\": \"x\"}]}", 400, "messages[0].role"},
      {"/tokenize", "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"tools\": [{}]}", 400,
       "tools[0].type"},
      {"/tokenize", "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"tool_choice\": \"auto\"}", 400,
       "tool_choice"},
      {"/tokenize", "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"chat_template_kwargs\": 1}", 400,
       "chat_template_kwargs"},
      {"/tokenize",
       "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"continue_final_message\": true, "
       "\"add_generation_prompt\": true}",
       400, "continue_final_message"},
      {"/detokenize", "{}", 400, "tokens"},
      {"/detokenize", "{\"tokens\": \"1 2\"}", 400, "tokens"},
      {"/detokenize", "{\"tokens\": [1, \"a\"]}", 400, "tokens"},
      {"/detokenize", "{\"tokens\": [1, 2.5]}", 400, "tokens"},
      {"/detokenize", "{\"tokens\": [-1]}", 400, "tokens"},
      {"/detokenize", "{\"tokens\": [" + std::to_string(vocab) + "]}", 400, "tokens"},
      {"/detokenize", "{\"tokens\": [99999999999999999999]}", 400, "tokens"},
      {"/detokenize", "{\"tokens\": [1], \"prompt\": \"x\"}", 400, "prompt"},
      {"/detokenize", "{\"tokens\": [1], \"model\": \"gpt-4\"}", 404, "model"},
  };
  for (const BadCase& c : cases) {
    auto res = post(c.path, c.body);
    ASSERT_TRUE(res) << res.error();
    EXPECT_EQ(res->status, c.status) << c.path << " " << c.body << " -> " << res->body;
    const json j = json::parse(res->body, nullptr, false);
    ASSERT_TRUE(j.is_object() && j.contains("error")) << res->body;
    EXPECT_FALSE(j["error"]["message"].get<std::string>().empty());
    EXPECT_EQ(j["error"]["param"], *c.param ? json(c.param) : json(nullptr)) << c.body << " -> " << res->body;
  }
  // The id out of the vocabulary is named in the message.
  auto res = post("/detokenize", "{\"tokens\": [1, " + std::to_string(vocab + 5) + "]}");
  EXPECT_NE(res->body.find("tokens[1]"), std::string::npos) << res->body;
  // JSON only.
  EXPECT_EQ(post("/tokenize", "{\"prompt\": \"x\"}", "text/plain")->status, 415);
  EXPECT_EQ(post("/detokenize", "{\"tokens\": [1]}", "")->status, 415);
  // Still serving.
  EXPECT_EQ(ok("/tokenize", {{"prompt", "x"}})["count"], tok_->encode("x", true).size());
}

TEST_F(ServerTokenize, OpenWithoutTheKeyLikeVllmWhileV1NeedsIt) {
  HttpClient cli("127.0.0.1", server_->port());
  auto t = cli.Post("/tokenize", "{\"prompt\": \"x\"}", "application/json");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->status, 200) << t->body;
  auto d = cli.Post("/detokenize", "{\"tokens\": [1]}", "application/json");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->status, 200) << d->body;
  auto v1 = cli.Post("/v1/completions", "{\"prompt\": \"x\", \"max_tokens\": 1}", "application/json");
  ASSERT_TRUE(v1);
  EXPECT_EQ(v1->status, 401);
  EXPECT_EQ(cli.Get("/tokenize")->status, 405);
}

}  // namespace
}  // namespace seam
