// logprobs, top_logprobs, echo and logit_bias over HTTP on stories260K: the response and
// stream shapes of OpenAI's completions (legacy logprobs) and chat completions, bounds,
// and logit_bias steering greedy decoding.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bench_serving/http_client.h"
#include "server_process.h"

namespace seam {
namespace {

using json = nlohmann::json;

class ServerLogprobs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new test::ServerProcess(std::vector<std::string>{}); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static test::ServerProcess* server_;

  static HttpResult post_raw(const std::string& path, const json& body) {
    HttpClient cli("127.0.0.1", server_->port());
    cli.set_read_timeout(120, 0);
    return cli.Post(path.c_str(), body.dump(), "application/json");
  }
  static json post(const std::string& path, const json& body) {
    auto res = post_raw(path, body);
    EXPECT_TRUE(res) << res.error();
    if (!res) return json();
    EXPECT_EQ(res->status, 200) << res->body;
    return json::parse(res->body);
  }
  // The data events of a stream, [DONE] excluded.
  static std::vector<json> stream(const std::string& path, json body) {
    body["stream"] = true;
    auto res = post_raw(path, body);
    EXPECT_TRUE(res && res->status == 200);
    std::vector<json> events;
    if (!res) return events;
    std::istringstream in(res->body);
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("data: ", 0) == 0 && line != "data: [DONE]") events.push_back(json::parse(line.substr(6)));
    return events;
  }
};
test::ServerProcess* ServerLogprobs::server_ = nullptr;

const json k_chat_messages = json::array({{{"role", "user"}, {"content", "Tell me a story"}}});

TEST_F(ServerLogprobs, CompletionLogprobsShape) {
  const json r = post("/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 6}, {"temperature", 0},
                                          {"ignore_eos", true}, {"logprobs", 3}});
  const json& c = r["choices"][0];
  const json& lp = c["logprobs"];
  ASSERT_TRUE(lp.is_object()) << r.dump();
  ASSERT_EQ(lp["tokens"].size(), 6u);
  ASSERT_EQ(lp["token_logprobs"].size(), 6u);
  ASSERT_EQ(lp["top_logprobs"].size(), 6u);
  ASSERT_EQ(lp["text_offset"].size(), 6u);
  std::string joined;
  for (size_t i = 0; i < 6; ++i) {
    const std::string tok = lp["tokens"][i];
    EXPECT_EQ(lp["text_offset"][i].get<size_t>(), joined.size());
    joined += tok;
    const double l = lp["token_logprobs"][i];
    EXPECT_LE(l, 0.0);
    const json& top = lp["top_logprobs"][i];
    ASSERT_TRUE(top.is_object());
    EXPECT_GE(top.size(), 3u);  // the top 3 and the chosen token (greedy: one of them)
    EXPECT_LE(top.size(), 4u);
    double best = -1e30;
    for (const auto& [k, v] : top.items()) best = std::max(best, v.get<double>());
    EXPECT_EQ(l, best) << "greedy: the chosen token is the most likely";
    EXPECT_EQ(top[tok].get<double>(), l);
  }
  EXPECT_EQ(joined, c["text"].get<std::string>());  // the tokens spell the text
  // Without logprobs the field stays null, and asking changes nothing else.
  const json plain = post("/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 6}, {"temperature", 0},
                                              {"ignore_eos", true}});
  EXPECT_TRUE(plain["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(plain["choices"][0]["text"], c["text"]);
  // logprobs: 0 gives the chosen token alone.
  const json zero = post("/v1/completions", {{"prompt", "Once"}, {"max_tokens", 2}, {"logprobs", 0}, {"seed", 3}});
  for (const json& top : zero["choices"][0]["logprobs"]["top_logprobs"]) EXPECT_EQ(top.size(), 1u);
}

TEST_F(ServerLogprobs, BoundsAre400NamingTheField) {
  for (const auto& [path, body, param] : std::vector<std::tuple<std::string, json, std::string>>{
           {"/v1/completions", {{"prompt", "x"}, {"logprobs", 21}}, "logprobs"},
           {"/v1/completions", {{"prompt", "x"}, {"logprobs", -1}}, "logprobs"},
           {"/v1/chat/completions", {{"messages", k_chat_messages}, {"logprobs", true}, {"top_logprobs", 21}},
            "top_logprobs"},
           {"/v1/chat/completions", {{"messages", k_chat_messages}, {"top_logprobs", 2}}, "top_logprobs"},
           {"/v1/completions", {{"prompt", "x"}, {"logit_bias", {{"512", 1}}}}, "logit_bias"},
           {"/v1/completions", {{"prompt", "x"}, {"logit_bias", {{"5", 101}}}}, "logit_bias"},
       }) {
    auto res = post_raw(path, body);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << body.dump() << " -> " << res->body;
    EXPECT_EQ(json::parse(res->body)["error"]["param"], param) << body.dump();
  }
  // The edges are accepted.
  post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 1}, {"logprobs", 20}});
  post("/v1/chat/completions", {{"messages", k_chat_messages}, {"max_tokens", 1}, {"logprobs", true}, {"top_logprobs", 0}});
}

TEST_F(ServerLogprobs, EchoWithPromptLogprobs) {
  const json r = post("/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 3}, {"temperature", 0},
                                          {"ignore_eos", true}, {"logprobs", 1}, {"echo", true}});
  const json gen = post("/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 3}, {"temperature", 0},
                                            {"ignore_eos", true}, {"logprobs", 1}});
  const std::string text = r["choices"][0]["text"];
  EXPECT_EQ(text, "Once upon a time" + gen["choices"][0]["text"].get<std::string>());
  const json& lp = r["choices"][0]["logprobs"];
  const int n_prompt = r["usage"]["prompt_tokens"];
  ASSERT_EQ(lp["tokens"].size(), size_t(n_prompt + 3));
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());  // the first prompt token has no logprob
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  for (int i = 1; i < n_prompt + 3; ++i) EXPECT_LE(lp["token_logprobs"][i].get<double>(), 0.0) << i;
  for (int i = 0; i < 3; ++i)  // the completion part is what the request without echo got
    EXPECT_EQ(lp["token_logprobs"][n_prompt + i], gen["choices"][0]["logprobs"]["token_logprobs"][i]);
  // echo + max_tokens 0: score a text (an evaluation harness's loglikelihood request).
  const json score = post("/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 0}, {"logprobs", 0},
                                              {"echo", true}});
  EXPECT_EQ(score["choices"][0]["text"], "Once upon a time");
  EXPECT_EQ(score["choices"][0]["logprobs"]["token_logprobs"].size(), size_t(n_prompt));
  for (int i = 1; i < n_prompt; ++i)
    EXPECT_NEAR(score["choices"][0]["logprobs"]["token_logprobs"][i].get<double>(),
                lp["token_logprobs"][i].get<double>(), 1e-5);
  // echo alone: the text only.
  const json plain = post("/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 2}, {"echo", true}});
  EXPECT_EQ(plain["choices"][0]["text"].get<std::string>().rfind("Once upon a time", 0), 0u);
  EXPECT_TRUE(plain["choices"][0]["logprobs"].is_null());
}

TEST_F(ServerLogprobs, ChatLogprobsShape) {
  const json r = post("/v1/chat/completions", {{"messages", k_chat_messages}, {"max_tokens", 5}, {"temperature", 0},
                                               {"logprobs", true}, {"top_logprobs", 2}});
  const json& content = r["choices"][0]["logprobs"]["content"];
  ASSERT_TRUE(content.is_array()) << r.dump();
  ASSERT_EQ(content.size(), r["usage"]["completion_tokens"].get<size_t>());
  std::string joined;
  for (const json& e : content) {
    const std::string tok = e["token"];
    joined += tok;
    std::string from_bytes;
    for (const json& b : e["bytes"]) from_bytes += char(b.get<int>());
    EXPECT_EQ(from_bytes, tok);
    ASSERT_EQ(e["top_logprobs"].size(), 2u);
    EXPECT_EQ(e["top_logprobs"][0]["token"], e["token"]);  // greedy
    EXPECT_EQ(e["top_logprobs"][0]["logprob"], e["logprob"]);
    EXPECT_GE(e["top_logprobs"][0]["logprob"].get<double>(), e["top_logprobs"][1]["logprob"].get<double>());
  }
  EXPECT_EQ(joined, r["choices"][0]["message"]["content"].get<std::string>());
}

TEST_F(ServerLogprobs, StreamChunksCarryTheirTokensLogprobs) {
  const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 5}, {"temperature", 0}, {"ignore_eos", true},
                     {"logprobs", 2}, {"echo", true}};
  const json whole = post("/v1/completions", body);
  json tokens = json::array(), lps = json::array();
  std::string text;
  for (const json& ev : stream("/v1/completions", body)) {
    const json& c = ev["choices"][0];
    text += c["text"].get<std::string>();
    if (c["logprobs"].is_null()) continue;
    for (const json& t : c["logprobs"]["tokens"]) tokens.push_back(t);
    for (const json& l : c["logprobs"]["token_logprobs"]) lps.push_back(l);
  }
  EXPECT_EQ(text, whole["choices"][0]["text"]);
  EXPECT_EQ(tokens, whole["choices"][0]["logprobs"]["tokens"]);
  EXPECT_EQ(lps, whole["choices"][0]["logprobs"]["token_logprobs"]);
  // Chat: each content chunk carries logprobs.content for its tokens.
  const json chat = {{"messages", k_chat_messages}, {"max_tokens", 5}, {"temperature", 0}, {"logprobs", true},
                     {"top_logprobs", 1}};
  const json chat_whole = post("/v1/chat/completions", chat);
  json content = json::array();
  for (const json& ev : stream("/v1/chat/completions", chat)) {
    const json& c = ev["choices"][0];
    if (c["delta"].contains("content") && !c["delta"]["content"].get<std::string>().empty())
      EXPECT_TRUE(c["logprobs"].is_object()) << ev.dump();
    if (c["logprobs"].is_object())
      for (const json& e : c["logprobs"]["content"]) content.push_back(e);
  }
  EXPECT_EQ(content, chat_whole["choices"][0]["logprobs"]["content"]);
}

TEST_F(ServerLogprobs, LogitBiasForcesAToken) {
  const json plain = post("/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 3}, {"temperature", 0},
                                              {"ignore_eos", true}, {"logprobs", 1}});
  const json& plain_lp = plain["choices"][0]["logprobs"];
  const std::string greedy_first = plain_lp["tokens"][0];
  // +100 on one token id: greedy decoding produces that token at every step.
  const json r = post("/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 3}, {"temperature", 0},
                                          {"ignore_eos", true}, {"logprobs", 1}, {"logit_bias", {{"300", 100}}}});
  const json& lp = r["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 3u);
  const std::string forced = lp["tokens"][1];
  EXPECT_EQ(lp["tokens"][2], forced);
  EXPECT_NE(forced, plain_lp["tokens"][1].get<std::string>());
  EXPECT_NE(lp["tokens"][0], greedy_first);
  // The logprobs are the model's own, before the bias: the unbiased favourite is still the
  // top alternative with its unbiased logprob, and the forced token is less likely.
  const json& top0 = lp["top_logprobs"][0];
  ASSERT_TRUE(top0.contains(greedy_first)) << top0.dump();
  EXPECT_EQ(top0[greedy_first], plain_lp["token_logprobs"][0]);
  EXPECT_LT(lp["token_logprobs"][0].get<double>(), plain_lp["token_logprobs"][0].get<double>());
}

}  // namespace
}  // namespace seam
