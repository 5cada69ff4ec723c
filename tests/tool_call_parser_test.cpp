// Tool-call and reasoning parsers (server/tool_call_parser.h, reasoning_parser.h,
// chat_output.h): each format parsed in one piece gives the expected calls and
// content, and the same text fed split at every byte position (and byte by
// byte) gives exactly the same content and calls; text that is not a call stays
// content, and no part of a marker leaks into content.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "core/error.h"
#include "server/chat_output.h"
#include "server/openai_response.h"
#include "server/reasoning_parser.h"
#include "server/tool_call_parser.h"

namespace seam {
namespace {

using json = nlohmann::json;

struct Parsed {
  std::string content;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments
  std::vector<std::string> ids;
};

// Merges deltas as an OpenAI client does (by index; the first delta has id and name).
void merge(Parsed& p, ToolParseDelta&& d) {
  p.content += d.content;
  for (ToolCallDelta& c : d.calls) {
    if (!c.id.empty()) {
      ASSERT_EQ(size_t(c.index), p.calls.size()) << "a call's first delta opens the next index";
      EXPECT_TRUE(c.arguments.empty()) << "the first delta carries arguments \"\"";
      EXPECT_FALSE(c.name.empty());
      p.calls.emplace_back(c.name, "");
      p.ids.push_back(c.id);
    } else {
      ASSERT_LT(size_t(c.index), p.calls.size()) << "arguments before the call's first delta";
      EXPECT_TRUE(c.name.empty());
      p.calls[size_t(c.index)].second += c.arguments;
    }
  }
}

Parsed parse_pieces(const std::string& parser, const std::vector<std::string>& pieces) {
  auto p = make_tool_call_parser(parser);
  Parsed out;
  for (const std::string& piece : pieces) merge(out, p->feed(piece));
  merge(out, p->finish());
  EXPECT_EQ(p->n_calls(), int(out.calls.size()));
  return out;
}

Parsed parse_once(const std::string& parser, const std::string& text) { return parse_pieces(parser, {text}); }

// Every split into two pieces, three pieces around each position, and byte by byte: all equal the one-shot parse.
void expect_split_invariant(const std::string& parser, const std::string& text) {
  const Parsed whole = parse_once(parser, text);
  for (size_t i = 0; i <= text.size(); ++i) {
    const Parsed split = parse_pieces(parser, {text.substr(0, i), text.substr(i)});
    ASSERT_EQ(split.content, whole.content) << parser << " split at " << i << " of: " << text;
    ASSERT_EQ(split.calls, whole.calls) << parser << " split at " << i << " of: " << text;
  }
  std::vector<std::string> bytes;
  for (char c : text) bytes.emplace_back(1, c);
  const Parsed by_byte = parse_pieces(parser, bytes);
  EXPECT_EQ(by_byte.content, whole.content) << parser << " byte by byte: " << text;
  EXPECT_EQ(by_byte.calls, whole.calls) << parser << " byte by byte: " << text;
  for (size_t k = 0; k < by_byte.ids.size(); ++k) {
    EXPECT_EQ(by_byte.ids[k].rfind("call_", 0), 0u) << by_byte.ids[k];
    for (size_t m = 0; m < k; ++m) EXPECT_NE(by_byte.ids[k], by_byte.ids[m]) << "ids are unique";
  }
}

using Calls = std::vector<std::pair<std::string, std::string>>;

void expect_parse(const std::string& parser, const std::string& text, const std::string& content, const Calls& calls) {
  const Parsed p = parse_once(parser, text);
  EXPECT_EQ(p.content, content) << parser << ": " << text;
  EXPECT_EQ(p.calls, calls) << parser << ": " << text;
  expect_split_invariant(parser, text);
}

TEST(ToolCallParser, Hermes) {
  for (const std::string name : {"hermes", "qwen25"}) {
    expect_parse(name,
                 "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", "
                 "\"unit\": \"c\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": "
                 "\"CET\"}}\n</tool_call>",
                 "Let me check.\n",
                 {{"get_weather", R"({"city":"Paris","unit":"c"})"}, {"get_time", R"({"tz":"CET"})"}});
    // Text after a call stays content; a call the model did not close is still a call at the end.
    expect_parse(name, "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>\nDone.<tool_call>{\"name\": \"g\"}",
                 "Done.", {{"f", "{}"}, {"g", "{}"}});
    // Not a call: the raw text is content, markers included.
    expect_parse(name, "a <tool_call>not json</tool_call> b", "a <tool_call>not json</tool_call> b", {});
    // Whitespace before the first call at the start, between and after calls is not content.
    expect_parse(name, "\n <tool_call>{\"name\": \"f\"}</tool_call>\n\n<tool_call>{\"name\": \"g\"}</tool_call>\n", "",
                 {{"f", "{}"}, {"g", "{}"}});
    expect_parse(name, "\n \n", "\n \n", {});
    expect_parse(name, "x < y and <tool_ca", "x < y and <tool_ca", {});
    expect_parse(name, "no calls at all, {\"name\": \"f\"}", "no calls at all, {\"name\": \"f\"}", {});
    // Arguments nested past k_max_json_depth are not a call (nothing walks them): content.
    const std::string deep = "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": " + std::string(300, '[') +
                             std::string(300, ']') + "}}</tool_call>";
    expect_parse(name, deep, deep, {});
    // Strings holding braces and escaped quotes.
    expect_parse(name, "<tool_call>{\"name\": \"echo\", \"arguments\": {\"s\": \"}\\\"{\"}}</tool_call>", "",
                 {{"echo", R"({"s":"}\"{"})"}});
  }
}

TEST(ToolCallParser, Llama3) {
  expect_parse("llama3", "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", "",
               {{"get_weather", R"({"city":"Paris"})"}});
  expect_parse("llama3",
               " {\"name\": \"f\", \"parameters\": {\"a\": 1}}; {\"name\": \"g\", \"arguments\": {\"b\": [1, 2]}}",
               "", {{"f", R"({"a":1})"}, {"g", R"({"b":[1,2]})"}});
  expect_parse("llama3", "Sure.<|python_tag|>{\"name\": \"search\", \"parameters\": {\"q\": \"x\"}}", "Sure.",
               {{"search", R"({"q":"x"})"}});
  // JSON that is not a call, and a brace later in the text, are content.
  expect_parse("llama3", "{\"a\": 1} and more", "{\"a\": 1} and more", {});
  expect_parse("llama3", "Hello {\"name\": \"f\"}", "Hello {\"name\": \"f\"}", {});
  expect_parse("llama3", "{\"name\": \"f\", \"parameters\": {", "{\"name\": \"f\", \"parameters\": {", {});
  expect_parse("llama3", "<|python_tag|>print(1)", "<|python_tag|>print(1)", {});
}

TEST(ToolCallParser, Mistral) {
  expect_parse("mistral",
               "Calling.[TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {\"x\": \"y\"}}, {\"name\": \"g\", "
               "\"arguments\": {}}]",
               "Calling.", {{"f", R"({"x":"y"})"}, {"g", "{}"}});
  expect_parse("mistral", "[TOOL_CALLS]{\"name\": \"f\", \"arguments\": {\"k\": true}}", "", {{"f", R"({"k":true})"}});
  expect_parse("mistral", "[TOOL_CALLS] [{\"nom\": \"f\"}]", "[TOOL_CALLS] [{\"nom\": \"f\"}]", {});
  expect_parse("mistral", "[TOOL_CALL", "[TOOL_CALL", {});
  expect_parse("mistral", " [TOOL_CALLS] [{\"name\": \"f\"}] ", "", {{"f", "{}"}});
}

TEST(ToolCallParser, DeepSeekV3) {
  const std::string call1 =
      "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Tokyo\"}\n```<｜tool▁call▁end｜>";
  const std::string call2 =
      "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{\"tz\": \"JST\"}\n```<｜tool▁call▁end｜>";
  expect_parse("deepseekv3", "Checking.<｜tool▁calls▁begin｜>" + call1 + "\n" + call2 + "<｜tool▁calls▁end｜>",
               "Checking.", {{"get_weather", R"({"city":"Tokyo"})"}, {"get_time", R"({"tz":"JST"})"}});
  expect_parse("deepseekv3", "<｜tool▁calls▁begin｜>" + call1, "", {{"get_weather", R"({"city":"Tokyo"})"}});
  const std::string bad = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\nnot json<｜tool▁call▁end｜>"
                          "<｜tool▁calls▁end｜>";
  expect_parse("deepseekv3", bad, bad, {});
}

TEST(ToolCallParser, UnknownNameIsAnErrorListingTheNames) {
  try {
    make_tool_call_parser("harmony");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("llama3, hermes, qwen25, qwen3_coder, mistral, deepseekv3, deepseekv31, kimi_k2, "
                                         "glm45, glm47, pythonic"),
              std::string::npos)
        << e.what();
  }
}

TEST(ToolCallParser, DeepSeekV31) {
  const std::string call1 = "<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Tokyo\"}<｜tool▁call▁end｜>";
  const std::string call2 = "<｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{}<｜tool▁call▁end｜>";
  expect_parse("deepseekv31", "Checking.<｜tool▁calls▁begin｜>" + call1 + call2 + "<｜tool▁calls▁end｜>", "Checking.",
               {{"get_weather", R"({"city":"Tokyo"})"}, {"get_time", "{}"}});
  // V3's fenced form is not V3.1's: the text stays content.
  const std::string v3 = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{}\n```<｜tool▁call▁end｜>"
                         "<｜tool▁calls▁end｜>";
  expect_parse("deepseekv31", v3, v3, {});
}

TEST(ToolCallParser, KimiK2) {
  expect_parse("kimi_k2",
               "Let me look.<|tool_calls_section_begin|>\n<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
               "{\"city\": \"Beijing\"}<|tool_call_end|>\n<|tool_call_begin|>functions.get_time:1<|tool_call_argument_begin|>{}"
               "<|tool_call_end|><|tool_calls_section_end|>",
               "Let me look.", {{"get_weather", R"({"city":"Beijing"})"}, {"get_time", "{}"}});
  const std::string bad = "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>[1]"
                          "<|tool_call_end|><|tool_calls_section_end|>";
  expect_parse("kimi_k2", bad, bad, {});
  expect_parse("kimi_k2", "a <|tool_calls_sec", "a <|tool_calls_sec", {});
}

// The request's tools, for the formats whose parameter values are raw text.
nlohmann::ordered_json typed_tools() {
  return nlohmann::ordered_json::parse(R"([{"type": "function", "function": {"name": "search", "parameters": {"type": "object",
    "properties": {"q": {"type": "string"}, "n": {"type": "integer"}, "x": {"type": "number"}, "exact": {"type": "boolean"},
    "tags": {"type": "array", "items": {"type": "string"}}, "opts": {"type": "object"}, "id": {"type": ["string", "null"]},
    "alt": {"anyOf": [{"type": "null"}, {"type": "integer"}]}}}}}])");
}

Parsed parse_typed(const std::string& parser, const std::string& text) {
  auto p = make_tool_call_parser(parser, typed_tools());
  Parsed out;
  merge(out, p->feed(text));
  merge(out, p->finish());
  return out;
}

TEST(ToolCallParser, Qwen3CoderTypesValuesByTheTools) {
  const std::string text =
      "I'll search.\n<tool_call>\n<function=search>\n<parameter=q>\nred \"fox\"\n</parameter>\n<parameter=n>\n5\n"
      "</parameter>\n<parameter=x>\n2.50\n</parameter>\n<parameter=exact>\nTrue\n</parameter>\n<parameter=tags>\n[\"a\", "
      "\"b\"]\n</parameter>\n<parameter=opts>\n{\"k\": 1}\n</parameter>\n<parameter=id>\n007\n</parameter>\n"
      "<parameter=alt>\n3\n</parameter>\n<parameter=extra>\n42\n</parameter>\n</function>\n</tool_call>";
  const Parsed p = parse_typed("qwen3_coder", text);
  EXPECT_EQ(p.content, "I'll search.\n");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].first, "search");
  // A declared string keeps its text (007 stays a string); an undeclared parameter is a string.
  EXPECT_EQ(p.calls[0].second, R"({"q":"red \"fox\"","n":5,"x":2.5,"exact":true,"tags":["a","b"],"opts":{"k":1},"id":"007","alt":3,"extra":"42"})");
  // Values that do not fit their type stay strings; null is null.
  const Parsed q = parse_typed("qwen3_coder", "<tool_call><function=search><parameter=n>five</parameter><parameter=exact>maybe"
                                               "</parameter><parameter=q>null</parameter></function></tool_call>");
  ASSERT_EQ(q.calls.size(), 1u);
  EXPECT_EQ(q.calls[0].second, R"({"n":"five","exact":"maybe","q":null})");
  const Parsed big = parse_typed("qwen3_coder", "<tool_call><function=search><parameter=n>+7</parameter><parameter=x>1e400"
                                                 "</parameter></function><function=search><parameter=n>123456789012345678901234567890"
                                                 "</parameter></function></tool_call>");
  ASSERT_EQ(big.calls.size(), 2u);
  EXPECT_EQ(big.calls[0].second, R"({"n":7,"x":"1e400"})");
  EXPECT_EQ(big.calls[1].second, R"({"n":"123456789012345678901234567890"})");
  // Split invariance, several functions, a bare <function=...>, an unclosed call at the end.
  expect_parse("qwen3_coder",
               "<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n<function=g>\n</function>\n"
               "</tool_call>",
               "", {{"f", R"({"a":"1"})"}, {"g", "{}"}});
  expect_parse("qwen3_coder", "ok <function=f><parameter=a>x</parameter></function> done", "ok done", {{"f", R"({"a":"x"})"}});
  expect_parse("qwen3_coder", "<tool_call><function=f><parameter=a>x", "", {{"f", R"({"a":"x"})"}});
  expect_parse("qwen3_coder", "<tool_call>{\"name\": \"f\"}</tool_call>", "<tool_call>{\"name\": \"f\"}</tool_call>", {});
}

TEST(ToolCallParser, Glm45) {
  const Parsed p = parse_typed("glm45",
                               "<tool_call>search\n<arg_key>q</arg_key>\n<arg_value>北京 weather</arg_value>\n<arg_key>n"
                               "</arg_key>\n<arg_value>3</arg_value>\n<arg_key>tags</arg_key>\n<arg_value>[\"x\"]</arg_value>\n"
                               "</tool_call>");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].first, "search");
  EXPECT_EQ(p.calls[0].second, R"({"q":"北京 weather","n":3,"tags":["x"]})");
  expect_parse("glm45",
               "Sure.\n<tool_call>get_time\n<arg_key>tz</arg_key>\n<arg_value>CET</arg_value>\n</tool_call>\n<tool_call>"
               "ping\n</tool_call>",
               "Sure.\n", {{"get_time", R"({"tz":"CET"})"}, {"ping", "{}"}});
  // GLM-4.7 writes no newline after the name.
  expect_parse("glm47", "<tool_call>f<arg_key>a</arg_key><arg_value>{\"k\": [1]}</arg_value></tool_call>", "",
               {{"f", R"({"a":{"k":[1]}})"}});
  expect_parse("glm45", "<tool_call>f\n<arg_key>a</arg_key>oops</tool_call>", "<tool_call>f\n<arg_key>a</arg_key>oops</tool_call>", {});
}

TEST(ToolCallParser, Pythonic) {
  expect_parse("pythonic", "[get_weather(city=\"San Francisco\", days=3), get_time(tz='CET', utc=True, x=None)]", "",
               {{"get_weather", R"({"city":"San Francisco","days":3})"}, {"get_time", R"({"tz":"CET","utc":true,"x":null})"}});
  expect_parse("pythonic", " [f(a=[1, 2.5, -3e2], b={'k': (1, 'two'), 3: False}, c='it\\'s \\u00e9\\n')]", "",
               {{"f", R"({"a":[1,2.5,-300.0],"b":{"k":[1,"two"],"3":false},"c":"it's é\n"})"}});
  expect_parse("pythonic", "Calling.<|python_start|>[f()]<|python_end|> Done.", "Calling.Done.", {{"f", "{}"}});
  // Not a call list: content. A positional argument, text after a '[' that is no call, a later '['.
  expect_parse("pythonic", "[f(1)]", "[f(1)]", {});
  expect_parse("pythonic", "[1, 2] are numbers", "[1, 2] are numbers", {});
  expect_parse("pythonic", "See [f(a=1)]", "See [f(a=1)]", {});
  expect_parse("pythonic", "[f(a=1)", "[f(a=1)", {});
  // Python's other escapes; an unhashable key and nesting past the parser's depth are not calls.
  expect_parse("pythonic", "[f(s='\\a\\b\\f\\v\\012\\101')]", "", {{"f", R"({"s":"\u0007\b\f\u000b\nA"})"}});
  expect_parse("pythonic", "[f(d={[1]: 2})]", "[f(d={[1]: 2})]", {});
  const std::string deep = "[f(a=" + std::string(100, '[') + std::string(100, ']') + ")]";
  EXPECT_EQ(parse_once("pythonic", deep).content, deep);
  const std::string ok = "[f(a=" + std::string(60, '[') + std::string(60, ']') + ")]";
  EXPECT_EQ(parse_once("pythonic", ok).calls.size(), 1u);
}

// Text made of the formats' own pieces in random order (markers, brackets, quotes, names, values):
// no parser throws, and each gives the same content and calls however the text is split.
TEST(ToolCallParser, ArbitraryPiecesNeverThrowAndSplitTheSame) {
  const std::vector<std::string> pieces = {
      "<tool_call>", "</tool_call>", "<function=", "</function>", "<parameter=", "</parameter>", "<arg_key>",
      "</arg_key>", "<arg_value>", "</arg_value>", "[TOOL_CALLS]", "<|python_tag|>", "<|python_start|>",
      "<|python_end|>", "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "<|tool_call_begin|>",
      "<|tool_call_argument_begin|>", "<|tool_call_end|>", "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>",
      "<｜tool▁sep｜>", "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>", "```json", "```", "{", "}", "[", "]", "(", ")",
      "\"", "'", ":", ",", "=", ">", "\n", " ", "\\", "name", "search", "n", "q", "functions.f:0", "1", "-2.5e3",
      "True", "None", "null", "\"name\": \"f\"", "\"arguments\": {}", "é", "\xff"};
  std::mt19937 rng(7);
  for (const std::string& parser : tool_call_parser_names()) {
    for (int trial = 0; trial < 150; ++trial) {
      std::string text;
      const int n = 1 + int(rng() % 24);
      for (int k = 0; k < n; ++k) text += pieces[rng() % pieces.size()];
      Parsed whole;
      ASSERT_NO_THROW(whole = parse_once(parser, text)) << parser << ": " << text;
      const size_t cut = rng() % (text.size() + 1);
      const Parsed split = parse_pieces(parser, {text.substr(0, cut), text.substr(cut)});
      ASSERT_EQ(split.content, whole.content) << parser << " split at " << cut << " of: " << text;
      ASSERT_EQ(split.calls, whole.calls) << parser << " split at " << cut << " of: " << text;
    }
  }
}

std::pair<std::string, std::string> reason(const std::string& name, const std::vector<std::string>& pieces) {
  auto p = make_reasoning_parser(name, true, true);
  std::pair<std::string, std::string> out;
  for (const std::string& piece : pieces) {
    ReasoningDelta d = p->feed(piece);
    out.first += d.reasoning;
    out.second += d.content;
  }
  ReasoningDelta d = p->finish();
  out.first += d.reasoning;
  out.second += d.content;
  return out;
}

void expect_reasoning(const std::string& name, const std::string& text, const std::string& reasoning,
                      const std::string& content) {
  EXPECT_EQ(reason(name, {text}), std::make_pair(reasoning, content)) << name << ": " << text;
  for (size_t i = 0; i <= text.size(); ++i)
    ASSERT_EQ(reason(name, {text.substr(0, i), text.substr(i)}), std::make_pair(reasoning, content))
        << name << " split at " << i << ": " << text;
  std::vector<std::string> bytes;
  for (char c : text) bytes.emplace_back(1, c);
  EXPECT_EQ(reason(name, bytes), std::make_pair(reasoning, content)) << name << " byte by byte";
}

TEST(ReasoningParser, DeepSeekR1StartsInsideTheReasoning) {
  expect_reasoning("deepseek-r1", "Let me think.\n</think>\n\nThe answer is 4.", "Let me think.\n", "The answer is 4.");
  expect_reasoning("deepseek-r1", "<think>\nhmm</think>ok", "\nhmm", "ok");
  expect_reasoning("deepseek-r1", "never closed </thi", "never closed </thi", "");
  expect_reasoning("deepseek-r1", "</think>", "", "");
}

TEST(ReasoningParser, Qwen3OnlyWhenTheOutputOpensThinking) {
  expect_reasoning("qwen3", "<think>\nplan</think>\n\nanswer", "\nplan", "answer");
  expect_reasoning("qwen3", "answer without thinking </think>", "", "answer without thinking </think>");
  expect_reasoning("qwen3", "<thin", "", "<thin");
  expect_reasoning("qwen3", "<think>cut off", "cut off", "");
}

TEST(ReasoningParser, QwenThinkingGlmAndKimi) {
  expect_reasoning("qwen3-thinking", "plan first</think>\n\nanswer", "plan first", "answer");
  expect_reasoning("glm45", "<think>hmm</think>ok", "hmm", "ok");
  expect_reasoning("glm45", "no thinking", "", "no thinking");
  expect_reasoning("kimi", "\u25c1think\u25b7step 1\u25c1/think\u25b7\nresult", "step 1", "result");
  expect_reasoning("kimi", "<think>not kimi's tag</think>", "", "<think>not kimi's tag</think>");
  EXPECT_EQ(make_reasoning_parser("glm45", true, false), nullptr) << "glm45 with enable_thinking false";
  EXPECT_NE(make_reasoning_parser("kimi", true, false), nullptr);
  try {
    check_reasoning_parser_name("r2");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("deepseek-r1, qwen3, qwen3-thinking, glm45, kimi"), std::string::npos) << e.what();
  }
}

TEST(ReasoningParser, RequestSwitches) {
  EXPECT_EQ(make_reasoning_parser("qwen3", true, false), nullptr) << "qwen3 with enable_thinking false";
  EXPECT_NE(make_reasoning_parser("deepseek-r1", true, false), nullptr) << "deepseek-r1 always reasons";
  EXPECT_EQ(make_reasoning_parser("deepseek-r1", false, true), nullptr) << "separate_reasoning false";
  EXPECT_THROW(make_reasoning_parser("r2", true, true), Error);
}

// Reasoning, then a hermes call in the content after it: the deltas and the message.
TEST(ChatOutput, ReasoningThenToolCallDeltasAndMessage) {
  const std::string text =
      "I need the weather.</think>\n\nOn it.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\"}}\n</tool_call>";
  for (size_t i = 0; i <= text.size(); ++i) {
    ChatOutput out(make_reasoning_parser("deepseek-r1", true, true), make_tool_call_parser("hermes"));
    std::vector<ChatOutputDelta> deltas = {out.feed(text.substr(0, i)), out.feed(text.substr(i)), out.finish()};
    std::string reasoning, content, args;
    json first_call;
    for (const ChatOutputDelta& d : deltas) {
      reasoning += d.reasoning;
      content += d.content;
      const json j = chat_delta_json(d);
      for (const json& c : j.value("tool_calls", json::array())) {
        if (c.contains("id")) {
          first_call = c;
        } else {
          ASSERT_EQ(c["index"], 0);
          args += c["function"]["arguments"].get<std::string>();
        }
      }
    }
    ASSERT_EQ(reasoning, "I need the weather.") << i;
    ASSERT_EQ(content, "On it.\n") << i;
    ASSERT_EQ(args, R"({"city":"Paris"})") << i;
    ASSERT_EQ(first_call["index"], 0);
    ASSERT_EQ(first_call["type"], "function");
    ASSERT_EQ(first_call["function"]["name"], "get_weather");
    ASSERT_EQ(first_call["function"]["arguments"], "");
    const json m = out.message_json();
    ASSERT_EQ(m["role"], "assistant");
    ASSERT_EQ(m["content"], "On it.\n");
    ASSERT_EQ(m["reasoning_content"], "I need the weather.");
    ASSERT_EQ(m["tool_calls"].size(), 1u);
    ASSERT_EQ(m["tool_calls"][0]["id"], first_call["id"]);
    ASSERT_EQ(m["tool_calls"][0]["type"], "function");
    ASSERT_EQ(m["tool_calls"][0]["function"], json({{"name", "get_weather"}, {"arguments", R"({"city":"Paris"})"}}));
    ASSERT_TRUE(out.has_tool_calls());
  }
}

TEST(ChatOutput, OnlyToolCallsGiveNullContentAndToolCallsFinish) {
  ChatOutput out(nullptr, make_tool_call_parser("mistral"));
  out.feed("[TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {}}]");
  out.finish();
  const json m = out.message_json();
  EXPECT_TRUE(m["content"].is_null());
  EXPECT_FALSE(m.contains("reasoning_content"));
  EXPECT_EQ(chat_finish_reason_json(FinishReason::stop, true), "tool_calls");
  EXPECT_EQ(chat_finish_reason_json(FinishReason::length, true), "tool_calls");
  EXPECT_EQ(chat_finish_reason_json(FinishReason::abort, true), "abort");
  EXPECT_EQ(chat_finish_reason_json(FinishReason::stop, false), "stop");
  EXPECT_TRUE(chat_finish_reason_json(FinishReason::none, true).is_null());

  // The whole response and a stream chunk built from it.
  ResponseHeader h;
  h.kind = ApiKind::chat;
  h.id = "chatcmpl-x";
  h.model = "m";
  ChoiceResult r;
  r.text = "[TOOL_CALLS] ...";
  r.finish_reason = FinishReason::stop;
  r.message = m;
  r.has_tool_calls = true;
  const json body = response_body(h, {r}, Usage{});
  EXPECT_EQ(body["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(body["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "f");
  EXPECT_TRUE(body["choices"][0]["message"]["content"].is_null());
  ChatOutputDelta d;
  d.reasoning = "r";
  const json chunk = chat_delta_chunk(h, 2, chat_delta_json(d), nullptr, false);
  EXPECT_EQ(chunk["object"], "chat.completion.chunk");
  EXPECT_EQ(chunk["choices"][0]["index"], 2);
  EXPECT_EQ(chunk["choices"][0]["delta"], json({{"reasoning_content", "r"}}));
  EXPECT_TRUE(chunk["choices"][0]["finish_reason"].is_null());
}

TEST(ChatOutput, ReasoningOnlyMessage) {
  ChatOutput out(make_reasoning_parser("deepseek-r1", true, true), nullptr);
  out.feed("still thinking");
  out.finish();
  const json m = out.message_json();
  EXPECT_TRUE(m["content"].is_null());
  EXPECT_EQ(m["reasoning_content"], "still thinking");
  EXPECT_FALSE(m.contains("tool_calls"));
}

}  // namespace
}  // namespace seam
