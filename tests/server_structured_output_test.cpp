// The structured-output request side over HTTP (seam serve on stories260K):
// what the server decides on its own, whatever the engine does with the
// constraint -- malformed, wrongly typed and conflicting fields are 400s
// naming the field on both routes; a named tool_choice needs no
// --tool-call-parser, runs no reasoning parser, and answers one tool call to
// the named function whose arguments are the generated text (content null,
// finish_reason "tool_calls"), the same streamed (id and name first, then
// argument deltas) as not. That outputs fit their constraints is
// server_structured_output_validation_test's.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_serving/http_client.h"
#include "server_process.h"
#include "test_util.h"

namespace seam {
namespace {

using json = nlohmann::json;

class ServerStructuredOutputRequest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string dir = test::make_temp_dir("so_req");
    test::write_file(dir + "/chat.jinja",
                     "{% if tools %}TOOLS:{% for t in tools %}{{ t.function.name }} {% endfor %}{{ '\\n' }}{% endif %}"
                     "{% for m in messages %}{{ m.role }}:{{ m.content }}{{ '\\n' }}{% endfor %}");
    // deepseek-r1 would take a whole output for reasoning (stories260K never writes </think>); no tool-call parser.
    server_ = new test::ServerProcess({"--chat-template", dir + "/chat.jinja", "--reasoning-parser", "deepseek-r1"});
  }
  static void TearDownTestSuite() { delete server_; }
  static HttpResult post(const std::string& route, const std::string& body) {
    HttpClient cli("127.0.0.1", server_->port());
    cli.set_read_timeout(120, 0);
    return cli.Post(route, body, "application/json");
  }
  static test::ServerProcess* server_;
};

test::ServerProcess* ServerStructuredOutputRequest::server_ = nullptr;

TEST_F(ServerStructuredOutputRequest, BadFieldsAre400sNamingTheField) {
  struct Case {
    std::string extra, param;
  };
  const std::vector<Case> cases = {
      {R"("response_format": {"type": "xml"})", "response_format.type"},
      {R"("response_format": {"type": "json_schema", "json_schema": {"schema": {}}})", "response_format.json_schema.name"},
      {R"("json_schema": "{oops")", "json_schema"},
      {R"("regex": 5)", "regex"},
      {R"("guided_choice": [])", "guided_choice"},
      {R"("structured_outputs": {"json": {}, "regex": "a"})", "structured_outputs.regex"},
      {R"("structured_outputs": {"whitespace_pattern": "\\s*", "json_object": true})", "structured_outputs.whitespace_pattern"},
      {R"("guided_whitespace_pattern": " ")", "guided_whitespace_pattern"},
      {R"("guided_decoding_backend": ["xgrammar"])", "guided_decoding_backend"},
      {R"("regex": "a", "guided_json": {"type": "object"})", "guided_json"},
  };
  for (const char* route : {"/v1/completions", "/v1/chat/completions"})
    for (const Case& c : cases) {
      const std::string head = std::string(route) == "/v1/completions"
                                   ? R"({"prompt": "Once", "max_tokens": 2, )"
                                   : R"({"messages": [{"role": "user", "content": "Once"}], "max_tokens": 2, )";
      auto res = post(route, head + c.extra + "}");
      ASSERT_TRUE(res);
      EXPECT_EQ(res->status, 400) << route << " " << c.extra << ": " << res->body;
      const json j = json::parse(res->body);
      EXPECT_EQ(j["error"]["param"], c.param) << route << " " << c.extra;
      EXPECT_EQ(j["error"]["type"], "invalid_request_error");
    }
  // Two constraints name both fields.
  auto res = post("/v1/completions", R"({"prompt": "Once", "regex": "a", "guided_json": {"type": "object"}})");
  ASSERT_TRUE(res);
  const std::string m = json::parse(res->body)["error"]["message"];
  EXPECT_NE(m.find("'regex'"), std::string::npos) << m;
  EXPECT_NE(m.find("'guided_json'"), std::string::npos) << m;
  // A backend's name is accepted (seam has one grammar engine).
  res = post("/v1/completions", R"({"prompt": "Once", "max_tokens": 2, "guided_decoding_backend": "xgrammar"})");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
}

const char* k_chat_with_tools =
    R"({"messages": [{"role": "user", "content": "Weather?"}], "max_tokens": 12, "temperature": 0,
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
                   "properties": {"city": {"type": "string", "maxLength": 6}}, "required": ["city"]}}},
                  {"type": "function", "function": {"name": "ping"}}])";

TEST_F(ServerStructuredOutputRequest, ToolChoiceMistakesAre400s) {
  struct Case {
    std::string extra, param;
  };
  for (const Case& c : std::vector<Case>{
           {R"(, "tool_choice": {"type": "function", "function": {"name": "get_time"}})", "tool_choice.function.name"},
           {R"(, "tool_choice": "required", "response_format": {"type": "json_object"})", "response_format"},
           {R"(, "tool_choice": {"type": "function", "function": {"name": "ping"}}, "guided_regex": "a")", "guided_regex"},
           {R"(, "tool_choice": {"type": "function"})", "tool_choice.function"},
       }) {
    auto res = post("/v1/chat/completions", k_chat_with_tools + c.extra + "}");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << c.extra << ": " << res->body;
    EXPECT_EQ(json::parse(res->body)["error"]["param"], c.param) << c.extra;
  }
  // "required" without tools.
  auto res = post("/v1/chat/completions",
                  R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"})");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(json::parse(res->body)["error"]["param"], "tool_choice");
  // auto still needs a tool-call parser to find calls in free text.
  res = post("/v1/chat/completions", k_chat_with_tools + std::string("}"));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(json::parse(res->body)["error"]["param"], "tools");
}

TEST_F(ServerStructuredOutputRequest, NamedToolChoiceAnswersOneCallStreamedOrNot) {
  const std::string body =
      k_chat_with_tools + std::string(R"(, "tool_choice": {"type": "function", "function": {"name": "get_weather"}})");
  auto res = post("/v1/chat/completions", body + "}");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json whole = json::parse(res->body);
  const json& choice = whole["choices"][0];
  const json& m = choice["message"];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_TRUE(m["content"].is_null()) << m.dump();
  EXPECT_FALSE(m.contains("reasoning_content")) << "a constrained output holds no reasoning: " << m.dump();
  ASSERT_EQ(m["tool_calls"].size(), 1u) << m.dump();
  const json& call = m["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["function"]["name"], "get_weather");
  const std::string id = call["id"];
  EXPECT_EQ(id.rfind("call_", 0), 0u);
  EXPECT_EQ(id.size(), 29u) << id;
  const std::string arguments = call["function"]["arguments"];
  EXPECT_FALSE(arguments.empty());
  EXPECT_GT(whole["usage"]["completion_tokens"].get<int>(), 0);

  res = post("/v1/chat/completions", body + R"(, "stream": true})");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  std::string streamed_args, name, content, finish;
  int n_first = 0, n_arg_deltas = 0;
  size_t pos = 0;
  while ((pos = res->body.find("data: {", pos)) != std::string::npos) {
    const size_t end = res->body.find("\n\n", pos);
    const json c = json::parse(res->body.substr(pos + 6, end - pos - 6));
    pos = end;
    const json& ch = c["choices"][0];
    const json& d = ch["delta"];
    if (d.contains("content") && d["content"].is_string()) content += d["content"].get<std::string>();
    EXPECT_FALSE(d.contains("reasoning_content"));
    for (const json& t : d.value("tool_calls", json::array())) {
      EXPECT_EQ(t["index"], 0);
      if (t.contains("id")) {
        ++n_first;
        EXPECT_EQ(n_arg_deltas, 0) << "the name comes before the arguments";
        EXPECT_EQ(t["type"], "function");
        EXPECT_EQ(t["function"]["arguments"], "");
        name = t["function"]["name"];
      } else {
        ++n_arg_deltas;
        EXPECT_FALSE(t["function"].contains("name"));
        streamed_args += t["function"]["arguments"].get<std::string>();
      }
    }
    if (!ch["finish_reason"].is_null()) finish = ch["finish_reason"];
  }
  EXPECT_EQ(n_first, 1);
  EXPECT_GT(n_arg_deltas, 1) << "arguments stream as they are generated";
  EXPECT_EQ(name, "get_weather");
  EXPECT_EQ(streamed_args, arguments);
  EXPECT_EQ(content, "");
  EXPECT_EQ(finish, "tool_calls");
}

}  // namespace
}  // namespace seam
