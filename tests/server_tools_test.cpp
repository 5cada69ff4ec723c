// Tools and reasoning over real HTTP on stories260K with a test chat template:
// tools, assistant tool_calls (string arguments reach the template as objects)
// and tool messages render in the client's member order; tool_choice "none"
// leaves the tools out; a named function must be one of the tools and a forced
// call takes no response_format (the forced calls themselves:
// server_structured_output_test); a server
// without --tool-call-parser refuses tools; the reasoning parser deepseek-r1
// turns the whole greedy output (stories260K never writes </think>) into
// reasoning_content, streamed or not, and separate_reasoning false leaves it in
// content. Expected outputs are the greedy completions of the expected prompt
// text on the same server, so the rendered prompt is checked exactly.
#include <gtest/gtest.h>

#include "bench_serving/http_client.h"
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "server/chat_template.h"
#include "server/openai_request.h"
#include "server_process.h"
#include "test_util.h"

namespace seam {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// Prints tools as JSON (member order visible), tool calls with an argument
// read as an object member, and tool results with their call id. (A newline
// after a block tag is trimmed, as transformers' trim_blocks does: '\n' is printed.)
const char* k_template =
    "{% if tools %}TOOLS:{% for t in tools %}{{ t | tojson }}{% endfor %}{{ '\\n' }}{% endif %}"
    "{% for m in messages %}{{ m.role }}:{{ m.content if m.content is not none else 'None' }}"
    "{% for c in m.tool_calls or [] %}[{{ c.function.name }} {{ c.function.arguments | tojson }} "
    "city={{ c.function.arguments.city }}]{% endfor %}"
    "{% if m.tool_call_id is defined %}({{ m.tool_call_id }}){% endif %}{{ '\\n' }}{% endfor %}";

const char* k_tools =
    R"([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}, "description": "Weather"}}])";

class ServerTools : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string dir = test::make_temp_dir("tools");
    test::write_file(dir + "/chat.jinja", k_template);
    tools_server_ = new test::ServerProcess(
        {"--chat-template", dir + "/chat.jinja", "--tool-call-parser", "hermes", "--reasoning-parser", "qwen3"});
    reasoning_server_ =
        new test::ServerProcess({"--chat-template", dir + "/chat.jinja", "--reasoning-parser", "deepseek-r1"});
  }
  static void TearDownTestSuite() {
    delete tools_server_;
    delete reasoning_server_;
  }
  static HttpResult post(test::ServerProcess* s, const std::string& route, const std::string& body) {
    HttpClient cli("127.0.0.1", s->port());
    cli.set_read_timeout(120, 0);
    return cli.Post(route, body, "application/json");
  }
  static json chat(test::ServerProcess* s, const std::string& body, int status = 200) {
    auto res = post(s, "/v1/chat/completions", body);
    EXPECT_TRUE(res);
    if (!res) return json();
    EXPECT_EQ(res->status, status) << res->body;
    return json::parse(res->body);
  }
  // The greedy completion of `prompt` (the template's text, encoded with BOS as the chat path does).
  static json complete(test::ServerProcess* s, const std::string& prompt, int max_tokens) {
    auto res = post(s, "/v1/completions",
                    json({{"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}}).dump());
    EXPECT_TRUE(res && res->status == 200);
    return json::parse(res->body);
  }
  static test::ServerProcess* tools_server_;
  static test::ServerProcess* reasoning_server_;
};

test::ServerProcess* ServerTools::tools_server_ = nullptr;
test::ServerProcess* ServerTools::reasoning_server_ = nullptr;

std::string request_with_history(const std::string& extra) {
  return R"({"messages": [
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"unit\": \"c\"}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "Sunny"}],
    "tools": )" + std::string(k_tools) + R"(, "max_tokens": 10, "temperature": 0)" + extra + "}";
}

// The text k_template renders for request_with_history (tools in the client's member order).
std::string expected_history_text(bool with_tools) {
  std::string t;
  if (with_tools)
    t += R"(TOOLS:{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", )"
         R"("properties": {"city": {"type": "string"}}}, "description": "Weather"}})" "\n";
  t += "user:Weather in Paris?\n";
  t += R"(assistant:None[get_weather {"city": "Paris", "unit": "c"} city=Paris])" "\n";
  t += "tool:Sunny(call_1)\n";
  return t;
}

// The request as parsed renders byte for byte: member order kept (description
// after parameters), string arguments an object, null content None, the tool
// message's id; kwargs keep their order too.
TEST(ToolRequest, RendersExactlyInTheClientsOrder) {
  const ChatTemplate t = ChatTemplate::from_jinja_text(k_template, "", "");
  const ApiRequest r = parse_api_request(request_with_history(""), ApiKind::chat);
  EXPECT_EQ(t.render(r.messages, true, r.tools, r.documents, r.chat_template_kwargs), expected_history_text(true));
  const ApiRequest none = parse_api_request(request_with_history(R"(, "tool_choice": "none")"), ApiKind::chat);
  EXPECT_TRUE(none.tools.is_null());
  EXPECT_EQ(t.render(none.messages, true, none.tools, none.documents, none.chat_template_kwargs),
            expected_history_text(false));
  const ApiRequest kw = parse_api_request(
      R"({"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": {"z": 1, "a": 2}})", ApiKind::chat);
  EXPECT_EQ(kw.chat_template_kwargs.dump(), R"({"z":1,"a":2})");
  // The built-in families cannot render tools: a clear error, not a silent drop.
  const ChatTemplate plain = ChatTemplate::from_name("plain", "", "");
  EXPECT_THROW(plain.render(r.messages, true, r.tools, r.documents, r.chat_template_kwargs), Error);
}

TEST_F(ServerTools, ToolsAndToolHistoryRenderInOrderAndPlainTextStaysContent) {
  const json j = chat(tools_server_, request_with_history(""));
  const json expected = complete(tools_server_, expected_history_text(true), 10);
  EXPECT_EQ(j["usage"]["prompt_tokens"], expected["usage"]["prompt_tokens"]);
  const json& m = j["choices"][0]["message"];
  // The hermes parser saw no call: the greedy text is content, nothing else.
  EXPECT_EQ(m["content"], expected["choices"][0]["text"]);
  EXPECT_FALSE(m.contains("tool_calls"));
  EXPECT_FALSE(m.contains("reasoning_content")) << "qwen3: the output does not open <think>";
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_FALSE(m["content"].get<std::string>().empty());
}

TEST_F(ServerTools, ToolChoiceNoneLeavesTheToolsOut) {
  const json j = chat(tools_server_, request_with_history(R"(, "tool_choice": "none")"));
  const json expected = complete(tools_server_, expected_history_text(false), 10);
  EXPECT_EQ(j["usage"]["prompt_tokens"], expected["usage"]["prompt_tokens"]);
  EXPECT_EQ(j["choices"][0]["message"]["content"], expected["choices"][0]["text"]);
}

TEST_F(ServerTools, StreamedContentEqualsTheWholeAnswer) {
  const json whole = chat(tools_server_, request_with_history(""));
  auto res = post(tools_server_, "/v1/chat/completions", request_with_history(R"(, "stream": true)"));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  std::string content, finish;
  size_t pos = 0;
  int n_chunks = 0;
  while ((pos = res->body.find("data: {", pos)) != std::string::npos) {
    const size_t end = res->body.find("\n\n", pos);
    const json c = json::parse(res->body.substr(pos + 6, end - pos - 6));
    pos = end;
    ++n_chunks;
    const json& d = c["choices"][0]["delta"];
    EXPECT_FALSE(d.contains("tool_calls"));
    EXPECT_FALSE(d.contains("reasoning_content"));
    if (d.contains("content")) content += d["content"].get<std::string>();
    if (!c["choices"][0]["finish_reason"].is_null()) finish = c["choices"][0]["finish_reason"];
  }
  EXPECT_GT(n_chunks, 2);
  EXPECT_EQ(content, whole["choices"][0]["message"]["content"]);
  EXPECT_EQ(finish, "length");
}

TEST_F(ServerTools, RefusalsNameTheField) {
  struct Case {
    std::string extra, param;
  };
  for (const Case& c : std::vector<Case>{
           {R"(, "tool_choice": {"type": "function", "function": {"name": "get_time"}})", "tool_choice.function.name"},
           {R"(, "tool_choice": "required", "response_format": {"type": "json_object"})", "response_format"},
           {R"(, "tool_choice": "sometimes")", "tool_choice"},
           {R"(, "separate_reasoning": 1)", "separate_reasoning"},
       }) {
    const json j = chat(tools_server_, request_with_history(c.extra), 400);
    EXPECT_EQ(j["error"]["param"], c.param) << c.extra;
  }
  const json bad_args = chat(tools_server_, R"({"messages": [{"role": "assistant", "tool_calls": [{"type": "function",
      "function": {"name": "f", "arguments": "{not json"}}]}]})", 400);
  EXPECT_EQ(bad_args["error"]["param"], "messages[0].tool_calls[0].function.arguments");
  const json user_calls = chat(tools_server_, R"({"messages": [{"role": "user", "content": "x", "tool_calls": []}]})", 400);
  EXPECT_EQ(user_calls["error"]["param"], "messages[0].tool_calls");
  const json bad_tool = chat(tools_server_, R"({"messages": [{"role": "user", "content": "x"}],
      "tools": [{"type": "function", "function": {"description": "no name"}}]})", 400);
  EXPECT_EQ(bad_tool["error"]["param"], "tools[0].function.name");
  // Without --tool-call-parser, tools are refused (never silently left unparsed) unless tool_choice is none.
  const json unparsed = chat(reasoning_server_, request_with_history(""), 400);
  EXPECT_EQ(unparsed["error"]["param"], "tools");
  EXPECT_NE(unparsed["error"]["message"].get<std::string>().find("--tool-call-parser"), std::string::npos);
  chat(reasoning_server_, request_with_history(R"(, "tool_choice": "none")"), 200);
}

TEST_F(ServerTools, DeepSeekR1ReasoningContent) {
  const std::string body = R"({"messages": [{"role": "user", "content": "Once upon a time"}], "max_tokens": 12,
                               "temperature": 0)";
  const json expected = complete(reasoning_server_, "user:Once upon a time\n", 12);
  const std::string text = expected["choices"][0]["text"];
  ASSERT_EQ(text.find("</think>"), std::string::npos);
  const json j = chat(reasoning_server_, body + "}");
  const json& m = j["choices"][0]["message"];
  EXPECT_EQ(m["reasoning_content"], text);
  EXPECT_TRUE(m["content"].is_null());
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");

  const json kept = chat(reasoning_server_, body + R"(, "separate_reasoning": false})");
  EXPECT_EQ(kept["choices"][0]["message"]["content"], text);
  EXPECT_FALSE(kept["choices"][0]["message"].contains("reasoning_content"));

  auto res = post(reasoning_server_, "/v1/chat/completions", body + R"(, "stream": true})");
  ASSERT_TRUE(res);
  std::string reasoning;
  size_t pos = 0;
  while ((pos = res->body.find("data: {", pos)) != std::string::npos) {
    const size_t end = res->body.find("\n\n", pos);
    const json c = json::parse(res->body.substr(pos + 6, end - pos - 6));
    pos = end;
    const json& d = c["choices"][0]["delta"];
    if (d.contains("reasoning_content")) reasoning += d["reasoning_content"].get<std::string>();
    if (d.contains("content")) EXPECT_EQ(d["content"], "") << "only the role chunk has content";
  }
  EXPECT_EQ(reasoning, text);
}

// Logprobs through the output parsers: the whole answer has one content entry
// per generated token, spelling the text the parsers split (content or
// reasoning); streamed, every chunk carries its own tokens' entries (a chunk
// whose text a parser holds back too), and together they equal the whole
// answer's, with the same text.
TEST_F(ServerTools, LogprobsWithParsersStreamedAndNot) {
  for (test::ServerProcess* s : {tools_server_, reasoning_server_}) {
    const std::string extra = R"(, "logprobs": true, "top_logprobs": 2)";
    const std::string body = s == tools_server_ ? request_with_history(extra)
                                                : R"({"messages": [{"role": "user", "content": "Once upon a time"}],
                                                     "max_tokens": 10, "temperature": 0)" + extra + "}";
    const json whole = chat(s, body);
    const json& m = whole["choices"][0]["message"];
    const std::string text = s == tools_server_ ? m["content"] : m["reasoning_content"];
    const json& entries = whole["choices"][0]["logprobs"]["content"];
    ASSERT_TRUE(entries.is_array()) << whole.dump();
    EXPECT_EQ(entries.size(), whole["usage"]["completion_tokens"].get<size_t>());
    std::string spelled;
    for (const json& e : entries) {
      spelled += e["token"].get<std::string>();
      ASSERT_EQ(e["top_logprobs"].size(), 2u);
      EXPECT_EQ(e["top_logprobs"][0]["token"], e["token"]) << "greedy: the chosen token is the most likely";
    }
    EXPECT_EQ(spelled, text);

    std::string streamed_body = body;
    streamed_body.insert(streamed_body.size() - 1, R"(, "stream": true)");
    auto res = post(s, "/v1/chat/completions", streamed_body);
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200);
    json streamed = json::array();
    std::string streamed_text;
    size_t pos = 0;
    while ((pos = res->body.find("data: {", pos)) != std::string::npos) {
      const size_t end = res->body.find("\n\n", pos);
      const json c = json::parse(res->body.substr(pos + 6, end - pos - 6));
      pos = end;
      const json& ch = c["choices"][0];
      for (const char* key : {"content", "reasoning_content"})
        if (ch["delta"].contains(key)) streamed_text += ch["delta"][key].get<std::string>();
      if (!ch["logprobs"].is_null())
        for (const json& e : ch["logprobs"]["content"]) streamed.push_back(e);
    }
    EXPECT_EQ(streamed_text, text);
    EXPECT_EQ(streamed, entries);
  }
}

// /tokenize renders tools and the tool history as chat does (read_chat_input is
// shared): the ids are the rendered text's, and chat's usage counts them.
TEST_F(ServerTools, TokenizeRendersToolsAsChatDoes) {
  ojson body = ojson::parse(request_with_history(""));
  body.erase("max_tokens");
  body.erase("temperature");
  auto res = post(tools_server_, "/tokenize", body.dump());
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json t = json::parse(res->body);
  const json expected = complete(tools_server_, expected_history_text(true), 1);
  EXPECT_EQ(t["count"], expected["usage"]["prompt_tokens"]);
  const json c = chat(tools_server_, request_with_history(""));
  EXPECT_EQ(c["usage"]["prompt_tokens"], t["count"]);
  body.erase("tools");
  auto without = post(tools_server_, "/tokenize", body.dump());
  ASSERT_TRUE(without && without->status == 200) << (without ? without->body : "");
  EXPECT_LT(json::parse(without->body)["count"].get<int>(), t["count"].get<int>()) << "the tools are rendered";
}

}  // namespace
}  // namespace seam
