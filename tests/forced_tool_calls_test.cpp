// ForcedToolCalls (server/forced_tool_calls.h) through ChatOutput: the output
// of a named or "required" tool_choice read as tool calls, at every split of
// the stream into two and three pieces: the streamed deltas add up to the
// one-shot message, the first delta of a call has its id and name, and text
// that is not the expected shape becomes content.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/chat_output.h"
#include "server/forced_tool_calls.h"

namespace seam {
namespace {

using json = nlohmann::json;

// Feeds `pieces` and finishes; the final message, with the deltas' sum in `streamed`.
json run(std::unique_ptr<ForcedToolCalls> forced, const std::vector<std::string>& pieces, ChatOutputDelta& streamed,
         std::vector<ChatOutputDelta>* deltas = nullptr) {
  ChatOutput out(std::move(forced));
  for (const std::string& p : pieces) {
    ChatOutputDelta d = out.feed(p);
    if (deltas) deltas->push_back(d);
    streamed.append(std::move(d));
  }
  ChatOutputDelta d = out.finish();
  if (deltas) deltas->push_back(d);
  streamed.append(std::move(d));
  return out.message_json();
}

// Every split of `text` into up to three pieces.
std::vector<std::vector<std::string>> splits(const std::string& text) {
  std::vector<std::vector<std::string>> out = {{text}};
  for (size_t i = 0; i <= text.size(); ++i)
    for (size_t j = i; j <= text.size(); ++j) out.push_back({text.substr(0, i), text.substr(i, j - i), text.substr(j)});
  return out;
}

// The streamed deltas folded as an OpenAI client does (by index: id, name, arguments appended).
json fold(const ChatOutputDelta& d) {
  json calls = json::array();
  for (const ToolCallDelta& c : d.tool_calls) {
    while (calls.size() <= size_t(c.index)) calls.push_back({{"id", ""}, {"name", ""}, {"arguments", ""}});
    json& call = calls[size_t(c.index)];
    if (!c.id.empty()) {
      EXPECT_TRUE(call["id"].get<std::string>().empty()) << "a call's id comes once";
      EXPECT_TRUE(call["arguments"].get<std::string>().empty()) << "the id and name come before the arguments";
      call["id"] = c.id;
      call["name"] = c.name;
    } else {
      EXPECT_FALSE(call["id"].get<std::string>().empty()) << "arguments before the call's first delta";
      EXPECT_TRUE(c.name.empty());
    }
    call["arguments"] = call["arguments"].get<std::string>() + c.arguments;
  }
  return calls;
}

TEST(ForcedToolCalls, NamedStreamsTheWholeOutputAsArguments) {
  const std::string text = R"({"city": "Paris", "days": [1, 2]})";
  for (const auto& pieces : splits(text)) {
    ChatOutputDelta streamed;
    std::vector<ChatOutputDelta> deltas;
    const json m = run(ForcedToolCalls::named("get_weather"), pieces, streamed, &deltas);
    EXPECT_TRUE(m["content"].is_null());
    ASSERT_EQ(m["tool_calls"].size(), 1u);
    const json& call = m["tool_calls"][0];
    EXPECT_EQ(call["type"], "function");
    EXPECT_EQ(call["function"]["name"], "get_weather");
    EXPECT_EQ(call["function"]["arguments"], text);
    const std::string id = call["id"];
    EXPECT_EQ(id.rfind("call_", 0), 0u) << id;
    EXPECT_EQ(id.size(), 5u + 24u) << id;
    EXPECT_TRUE(streamed.content.empty());
    const json folded = fold(streamed);
    ASSERT_EQ(folded.size(), 1u);
    EXPECT_EQ(folded[0]["id"], id);
    EXPECT_EQ(folded[0]["name"], "get_weather");
    EXPECT_EQ(folded[0]["arguments"], text);
    // The name comes with the first delta, before any of the text is complete.
    ASSERT_FALSE(deltas.empty());
    ASSERT_FALSE(deltas[0].tool_calls.empty());
    EXPECT_EQ(deltas[0].tool_calls[0].name, "get_weather");
    // Arguments stream: each piece of text is out as soon as it was fed.
    std::string so_far;
    for (size_t k = 0; k < pieces.size(); ++k) {
      so_far += pieces[k];
      std::string args;
      for (size_t q = 0; q <= k; ++q)
        for (const ToolCallDelta& c : deltas[q].tool_calls) args += c.arguments;
      EXPECT_EQ(args, so_far);
    }
  }
}

TEST(ForcedToolCalls, NamedWithNothingGeneratedIsOneCallWithEmptyArguments) {
  ChatOutputDelta streamed;
  const json m = run(ForcedToolCalls::named("now"), {}, streamed);
  ASSERT_EQ(m["tool_calls"].size(), 1u);
  EXPECT_EQ(m["tool_calls"][0]["function"]["name"], "now");
  EXPECT_EQ(m["tool_calls"][0]["function"]["arguments"], "");
}

TEST(ForcedToolCalls, RequiredGivesEachCallOfTheArray) {
  const std::string text = R"([{"name": "get_weather", "parameters": {"city": "P]a{r\"is"}}, {"name":"now","parameters":{}}])";
  for (const auto& pieces : splits(text)) {
    ChatOutputDelta streamed;
    const json m = run(ForcedToolCalls::required(), pieces, streamed);
    EXPECT_TRUE(m["content"].is_null()) << m.dump();
    ASSERT_EQ(m["tool_calls"].size(), 2u) << m.dump();
    EXPECT_EQ(m["tool_calls"][0]["function"]["name"], "get_weather");
    EXPECT_EQ(json::parse(m["tool_calls"][0]["function"]["arguments"].get<std::string>()),
              json({{"city", "P]a{r\"is"}}));
    EXPECT_EQ(m["tool_calls"][1]["function"]["name"], "now");
    EXPECT_EQ(m["tool_calls"][1]["function"]["arguments"], "{}");
    EXPECT_NE(m["tool_calls"][0]["id"], m["tool_calls"][1]["id"]);
    EXPECT_TRUE(streamed.content.empty());
    const json folded = fold(streamed);
    ASSERT_EQ(folded.size(), 2u);
    for (size_t k = 0; k < 2; ++k) {
      EXPECT_EQ(folded[k]["id"], m["tool_calls"][k]["id"]);
      EXPECT_EQ(folded[k]["name"], m["tool_calls"][k]["function"]["name"]);
      EXPECT_EQ(folded[k]["arguments"], m["tool_calls"][k]["function"]["arguments"]);
    }
  }
}

TEST(ForcedToolCalls, RequiredGivesACallAsSoonAsItsItemIsComplete) {
  ChatOutput out(ForcedToolCalls::required());
  ChatOutputDelta d = out.feed(R"([{"name": "a", "parameters": {"x": 1})");
  EXPECT_TRUE(d.tool_calls.empty());
  d = out.feed("}, {\"na");
  ASSERT_EQ(d.tool_calls.size(), 2u);  // id and name, then the arguments
  EXPECT_EQ(d.tool_calls[0].name, "a");
  EXPECT_EQ(d.tool_calls[1].arguments, R"({"x":1})");
  EXPECT_TRUE(d.content.empty());
}

TEST(ForcedToolCalls, RequiredOutputOfAnotherShapeIsContent) {
  for (const std::string text : {"Once upon a time", "[1, 2]", R"([{"name": 1, "parameters": {}}])",
                                 R"({"name": "a", "parameters": {}})", ""}) {
    for (const auto& pieces : splits(text)) {
      ChatOutputDelta streamed;
      const json m = run(ForcedToolCalls::required(), pieces, streamed);
      EXPECT_EQ(m["content"], text);
      EXPECT_FALSE(m.contains("tool_calls")) << m.dump();
      EXPECT_EQ(streamed.content, text);
    }
  }
}

TEST(ForcedToolCalls, RequiredCutShortKeepsTheCompleteCalls) {
  // A length cut inside the second item: the first call stands, the partial item is dropped.
  ChatOutputDelta streamed;
  const json m = run(ForcedToolCalls::required(), {R"([{"name": "a", "parameters": {}}, {"name": "b", "param)"},
                     streamed);
  ASSERT_EQ(m["tool_calls"].size(), 1u);
  EXPECT_EQ(m["tool_calls"][0]["function"]["name"], "a");
  EXPECT_TRUE(m["content"].is_null());
  EXPECT_EQ(chat_finish_reason_json(FinishReason::stop, true), "tool_calls");
}

}  // namespace
}  // namespace seam
