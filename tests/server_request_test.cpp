// parse_api_request: OpenAI request bodies to ApiRequest, and every way a body
// can be wrong (each a 400 naming the field); response and chunk shapes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/server_metrics.h"

namespace seam {
namespace {

using json = nlohmann::json;

ApiRequest completion(const json& body) { return parse_api_request(body.dump(), ApiKind::completion); }
ApiRequest chat(const json& body) { return parse_api_request(body.dump(), ApiKind::chat); }

// The ApiError a body raises (status 0 when it parses).
ApiError error_of(const std::string& body, ApiKind kind = ApiKind::completion) {
  try {
    parse_api_request(body, kind);
  } catch (const ApiError& e) {
    return e;
  }
  return ApiError(0, "parsed");
}

TEST(ServerRequest, CompletionFields) {
  ApiRequest r = completion({{"model", "m"},
                             {"prompt", "hello"},
                             {"max_tokens", 7},
                             {"temperature", 0.5},
                             {"top_p", 0.9},
                             {"top_k", 5},
                             {"min_p", 0.1},
                             {"seed", 42},
                             {"stop", "x"},
                             {"frequency_penalty", 0.5},
                             {"presence_penalty", -0.5},
                             {"repetition_penalty", 1.1},
                             {"ignore_eos", true},
                             {"disable_speculative", true},
                             {"n", 2},
                             {"stream", true},
                             {"stream_options", {{"include_usage", true}}},
                             {"logprobs", nullptr},
                             {"user", "ignored"}});
  EXPECT_EQ(r.model, "m");
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(r.prompts[0].text, "hello");
  EXPECT_FALSE(r.prompts[0].is_ids);
  EXPECT_EQ(r.params.max_new_tokens, 7);
  EXPECT_FLOAT_EQ(r.params.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r.params.top_p, 0.9f);
  EXPECT_EQ(r.params.top_k, 5);
  EXPECT_FLOAT_EQ(r.params.min_p, 0.1f);
  EXPECT_EQ(r.params.seed, std::optional<uint64_t>(42));
  EXPECT_EQ(r.params.stop, std::vector<std::string>{"x"});
  EXPECT_FLOAT_EQ(r.params.frequency_penalty, 0.5f);
  EXPECT_FLOAT_EQ(r.params.presence_penalty, -0.5f);
  EXPECT_FLOAT_EQ(r.params.repetition_penalty, 1.1f);
  EXPECT_TRUE(r.params.ignore_eos);
  EXPECT_TRUE(r.params.disable_speculative);
  EXPECT_EQ(r.n, 2);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
}

TEST(ServerRequest, Defaults) {
  ApiRequest r = completion({{"prompt", "x"}});
  EXPECT_EQ(r.params.max_new_tokens, 16);  // OpenAI's completions default
  EXPECT_FALSE(r.max_tokens_given);
  EXPECT_FLOAT_EQ(r.params.temperature, 1.f);
  EXPECT_EQ(r.n, 1);
  EXPECT_FALSE(r.stream);
  EXPECT_TRUE(r.model.empty());
  ApiRequest c = chat({{"messages", {{{"role", "user"}, {"content", "hi"}}}}});
  EXPECT_FALSE(c.max_tokens_given);  // the server fills in the rest of the context
}

TEST(ServerRequest, PromptForms) {
  EXPECT_EQ(completion({{"prompt", {1, 2, 3}}}).prompts[0].ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_TRUE(completion({{"prompt", {1, 2, 3}}}).prompts[0].is_ids);
  ApiRequest batch = completion({{"prompt", {"a", "b"}}, {"n", 2}});
  ASSERT_EQ(batch.prompts.size(), 2u);
  EXPECT_EQ(batch.prompts[1].text, "b");
  ApiRequest ids = completion({{"prompt", {{1, 2}, {3}}}});
  ASSERT_EQ(ids.prompts.size(), 2u);
  EXPECT_EQ(ids.prompts[1].ids, std::vector<int32_t>{3});
  EXPECT_EQ(completion({{"prompt", ""}}).prompts[0].text, "");  // BOS alone is a valid prompt
}

TEST(ServerRequest, ChatMessages) {
  ApiRequest r = chat({{"messages",
                        {{{"role", "developer"}, {"content", "be brief"}},
                         {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "a"}}, {{"type", "text"}, {"text", "b"}}}}},
                         {{"role", "assistant"}, {"content", nullptr}}}},
                       {"max_completion_tokens", 9}});
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[1].content, "a\nb");
  EXPECT_EQ(r.messages[2].content, "");
  EXPECT_EQ(r.params.max_new_tokens, 9);
  EXPECT_TRUE(r.max_tokens_given);
}

struct BadCase {
  const char* body;
  const char* param;  // "" when none
  ApiKind kind = ApiKind::completion;
};

TEST(ServerRequest, BadBodiesAre400NamingTheField) {
  const std::vector<BadCase> cases = {
      {"{bad json", ""},
      {"[1, 2]", ""},
      {"\"just a string\"", ""},
      {"{\"prompt\": \"\xff\xfe\"}", ""},  // invalid UTF-8
      {"{}", "prompt"},
      {"{\"prompt\": 5}", "prompt"},
      {"{\"prompt\": []}", "prompt"},
      {"{\"prompt\": [[]]}", "prompt"},
      {"{\"prompt\": [1, \"a\"]}", "prompt"},
      {"{\"prompt\": [-1]}", "prompt"},
      {"{\"prompt\": [1.5]}", "prompt"},
      {"{\"prompt\": [true]}", "prompt"},
      {"{\"prompt\": \"x\", \"max_tokens\": -1}", "max_tokens"},
      {"{\"prompt\": \"x\", \"max_tokens\": 1.5}", "max_tokens"},
      {"{\"prompt\": \"x\", \"max_tokens\": \"10\"}", "max_tokens"},
      {"{\"prompt\": \"x\", \"max_tokens\": 99999999999}", "max_tokens"},
      {"{\"prompt\": \"x\", \"max_tokens\": 100000000000000000000000}", "max_tokens"},
      {"{\"prompt\": \"x\", \"temperature\": \"hot\"}", "temperature"},
      {"{\"prompt\": \"x\", \"temperature\": true}", "temperature"},
      {"{\"prompt\": \"x\", \"top_k\": -2}", "top_k"},
      {"{\"prompt\": \"x\", \"n\": 0}", "n"},
      {"{\"prompt\": \"x\", \"n\": 17}", "n"},
      {"{\"prompt\": \"x\", \"stop\": 3}", "stop"},
      {"{\"prompt\": \"x\", \"stop\": [\"\"]}", "stop"},
      {"{\"prompt\": \"x\", \"stop\": [1]}", "stop"},
      {"{\"prompt\": \"x\", \"stream\": \"yes\"}", "stream"},
      {"{\"prompt\": \"x\", \"stream_options\": 1}", "stream_options"},
      {"{\"prompt\": \"x\", \"model\": 3}", "model"},
      {"{\"prompt\": \"x\", \"seed\": \"s\"}", "seed"},
      {"{\"prompt\": \"x\", \"logprobs\": 21}", "logprobs"},
      {"{\"prompt\": \"x\", \"logprobs\": -1}", "logprobs"},
      {"{\"prompt\": \"x\", \"logprobs\": true}", "logprobs"},
      {"{\"prompt\": \"x\", \"top_logprobs\": 2}", "top_logprobs"},
      {"{\"prompt\": \"x\", \"echo\": \"yes\"}", "echo"},
      {"{\"prompt\": \"x\", \"best_of\": 3}", "best_of"},
      {"{\"prompt\": \"x\", \"logit_bias\": {\"1\": 500}}", "logit_bias"},
      {"{\"prompt\": \"x\", \"logit_bias\": {\"a\": 5}}", "logit_bias"},
      {"{\"prompt\": \"x\", \"logit_bias\": {\"-1\": 5}}", "logit_bias"},
      {"{\"prompt\": \"x\", \"logit_bias\": {\"1\": \"5\"}}", "logit_bias"},
      {"{\"prompt\": \"x\", \"logit_bias\": [1]}", "logit_bias"},
      {"{\"prompt\": \"x\", \"suffix\": \"s\"}", "suffix"},
      {"{\"prompt\": [\"a\", \"b\"], \"n\": 16, \"user\": \"u\"}", ""},  // fine: 32 choices (checked below)
      {"{\"messages\": []}", "messages", ApiKind::chat},
      {"{\"messages\": {}}", "messages", ApiKind::chat},
      {"{}", "messages", ApiKind::chat},
      {"{\"messages\": [1]}", "messages[0]", ApiKind::chat},
      {"{\"messages\": [{\"content\": \"x\"}]}", "messages[0].role", ApiKind::chat},
      {"{\"messages\": [{\"role\": \"robot\", \"content\": \"x\"}]}", "messages[0].role", ApiKind::chat},
      {"{\"messages\": [{\"role\": \"user\", \"content\": 5}]}", "messages[0].content", ApiKind::chat},
      {"{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\"}]}]}", "messages[0].content",
       ApiKind::chat},
      {"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"logprobs\": 1}", "logprobs", ApiKind::chat},
      {"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"logprobs\": true, \"top_logprobs\": 21}",
       "top_logprobs", ApiKind::chat},
      {"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"echo\": true}", "echo", ApiKind::chat},
      {"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"top_logprobs\": 2}", "top_logprobs",
       ApiKind::chat},
      {"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"tools\": [{}]}", "tools[0].type", ApiKind::chat},
      {"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"response_format\": {\"type\": "
       "\"json_object\"}, \"regex\": \"a\"}",
       "regex", ApiKind::chat},
      {"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"response_format\": {\"type\": "
       "\"json_schema\"}}",
       "response_format.json_schema", ApiKind::chat},
      {"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"max_completion_tokens\": -5}",
       "max_completion_tokens", ApiKind::chat},
      {"{\"prompt\": \"x\", \"messages\": []}", "messages"},
  };
  for (const BadCase& c : cases) {
    const ApiError e = error_of(c.body, c.kind);
    if (std::string(c.body).find("\"user\": \"u\"") != std::string::npos) {
      EXPECT_EQ(e.status(), 0) << c.body;
      continue;
    }
    EXPECT_EQ(e.status(), 400) << c.body << " -> " << e.what();
    EXPECT_EQ(e.param(), c.param) << c.body << " -> " << e.what();
    EXPECT_EQ(e.type(), "invalid_request_error") << c.body;
    EXPECT_FALSE(std::string(e.what()).empty());
  }
}

TEST(ServerRequest, LogprobFields) {
  ApiRequest c = completion({{"prompt", "x"}, {"logprobs", 3}, {"echo", true}, {"logit_bias", {{"7", -100}, {"9", 2.5}}}});
  EXPECT_EQ(c.params.logprobs, 3);
  EXPECT_TRUE(c.echo);
  EXPECT_TRUE(c.params.prompt_logprobs);
  EXPECT_EQ(c.params.logit_bias, (std::vector<std::pair<int32_t, float>>{{7, -100.f}, {9, 2.5f}}));
  ApiRequest e = completion({{"prompt", "x"}, {"echo", true}});  // echo without logprobs: text only
  EXPECT_TRUE(e.echo);
  EXPECT_FALSE(e.params.prompt_logprobs);
  EXPECT_EQ(e.params.logprobs, -1);
  EXPECT_EQ(completion({{"prompt", "x"}, {"logprobs", 0}}).params.logprobs, 0);
  json msgs = json::array({{{"role", "user"}, {"content", "x"}}});
  EXPECT_EQ(chat({{"messages", msgs}, {"logprobs", true}, {"top_logprobs", 20}}).params.logprobs, 20);
  EXPECT_EQ(chat({{"messages", msgs}, {"logprobs", true}}).params.logprobs, 0);
  EXPECT_EQ(chat({{"messages", msgs}, {"logprobs", false}, {"top_logprobs", 0}}).params.logprobs, -1);
  EXPECT_EQ(chat({{"messages", msgs}}).params.logprobs, -1);
}

TEST(ServerRequest, TooManyChoices) {
  json prompts = json::array();
  for (int i = 0; i < 100; ++i) prompts.push_back("p");
  const ApiError e = error_of(json({{"prompt", prompts}, {"n", 16}}).dump());
  EXPECT_EQ(e.status(), 400);
}

TEST(ServerRequest, ErrorBodyShape) {
  const json body = ApiError(503, "busy").body();
  ASSERT_TRUE(body.contains("error"));
  EXPECT_EQ(body["error"]["message"], "busy");
  EXPECT_EQ(body["error"]["type"], "server_overloaded");
  EXPECT_TRUE(body["error"]["param"].is_null());
  EXPECT_TRUE(body["error"]["code"].is_null());
  EXPECT_EQ(bad_request("m", "n").body()["error"]["param"], "n");
}

TEST(ServerResponse, Shapes) {
  ResponseHeader h{ApiKind::completion, "cmpl-1", 123, "m"};
  const json body = response_body(h, {{"abc", FinishReason::length}}, Usage{5, 3, 1});
  EXPECT_EQ(body["object"], "text_completion");
  EXPECT_EQ(body["choices"][0]["text"], "abc");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(body["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(body["usage"]["total_tokens"], 8);
  EXPECT_EQ(body["usage"]["prompt_tokens_details"]["cached_tokens"], 1);

  ResponseHeader ch{ApiKind::chat, "chatcmpl-1", 123, "m"};
  const json cb = response_body(ch, {{"hi", FinishReason::stop}}, Usage{});
  EXPECT_EQ(cb["object"], "chat.completion");
  EXPECT_EQ(cb["choices"][0]["message"], json({{"role", "assistant"}, {"content", "hi"}}));
  const json role = stream_chunk(ch, 0, "", FinishReason::none, true, false);
  EXPECT_EQ(role["object"], "chat.completion.chunk");
  EXPECT_EQ(role["choices"][0]["delta"], json({{"role", "assistant"}, {"content", ""}}));
  EXPECT_TRUE(role["choices"][0]["finish_reason"].is_null());
  EXPECT_FALSE(role.contains("usage"));
  const json last = stream_chunk(ch, 1, "", FinishReason::stop, false, true);
  EXPECT_EQ(last["choices"][0]["delta"], json::object());
  EXPECT_EQ(last["choices"][0]["index"], 1);
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(last["usage"].is_null());
  const json u = usage_chunk(h, Usage{2, 3, 0});
  EXPECT_TRUE(u["choices"].empty());
  EXPECT_EQ(u["usage"]["completion_tokens"], 3);
  EXPECT_EQ(sse_event(json{{"a", 1}}), "data: {\"a\":1}\n\n");
}

TEST(ServerMetrics, HistogramIsCumulative) {
  Histogram h({0.1, 1.0});
  h.observe(0.05);
  h.observe(0.5, 2);
  h.observe(5.0);
  std::string out;
  h.render(out, "x", "help");
  EXPECT_NE(out.find("# TYPE x histogram"), std::string::npos);
  EXPECT_NE(out.find("x_bucket{le=\"0.1\"} 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_bucket{le=\"1\"} 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_bucket{le=\"+Inf\"} 4\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_count 4\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_sum 6.05\n"), std::string::npos) << out;
}

}  // namespace
}  // namespace seam
