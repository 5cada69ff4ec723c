// The server's chat request path (parse_api_request -> ChatTemplate) renders
// every tool case of the five shared Hub templates byte for byte as
// transformers does (../shared/chat_templates): tools in the client's member
// order, assistant tool_calls, tool results, None content beside tool calls.
// The same requests with the tool-call arguments given as JSON strings (as
// OpenAI clients send them) render identically: they reach the template as
// objects, as vLLM passes them; the golden cases that give string arguments
// (transformers prints the string) render as their object form does.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "server/chat_template.h"
#include "server/openai_request.h"
#include "test_util.h"

namespace seam {
namespace {

using ojson = nlohmann::ordered_json;

bool has_tool_parts(const ojson& c) {
  if (c.contains("tools") && !c["tools"].is_null()) return true;
  for (const ojson& m : c["messages"])
    if (m.contains("tool_calls") || m.value("role", "") == "tool") return true;
  return false;
}

enum class Arguments { as_given, to_strings, to_objects };

// The OpenAI request for a golden case, with its tool-call arguments as given,
// turned into JSON text (as OpenAI clients send them) or parsed into objects.
std::string request_body(const ojson& c, Arguments mode) {
  ojson body;
  body["messages"] = c["messages"];
  for (ojson& m : body["messages"])
    if (m.contains("tool_calls") && m["tool_calls"].is_array())
      for (ojson& call : m["tool_calls"]) {
        if (!call.contains("function") || !call["function"].contains("arguments")) continue;
        ojson& args = call["function"]["arguments"];
        if (mode == Arguments::to_strings && args.is_object()) args = args.dump();
        if (mode == Arguments::to_objects && args.is_string()) args = ojson::parse(args.get<std::string>());
      }
  if (c.contains("tools") && !c["tools"].is_null()) body["tools"] = c["tools"];
  if (c.contains("kwargs") && c["kwargs"].is_object() && !c["kwargs"].empty())
    body["chat_template_kwargs"] = c["kwargs"];
  return body.dump();
}

bool has_string_arguments(const ojson& c) {
  for (const ojson& m : c["messages"])
    for (const ojson& call : m.value("tool_calls", ojson::array()))
      if (call.contains("function") && call["function"].value("arguments", ojson()).is_string()) return true;
  return false;
}

std::string render(const ChatTemplate& t, const std::string& body) {
  const ApiRequest r = parse_api_request(body, ApiKind::chat);
  return t.render(r.messages, true, r.tools, r.documents, r.chat_template_kwargs);
}

TEST(ServerToolTemplateGolden, ToolCasesRenderByteForByte) {
  int n_cases = 0, n_errors = 0, n_converted = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::shared_dir() + "/chat_templates")) {
    if (entry.path().extension() != ".json") continue;
    const ojson file = ojson::parse(test::read_file(entry.path().string()));
    const auto token = [&](const char* key) {
      return file.contains(key) && file[key].is_string() ? file[key].get<std::string>() : std::string();
    };
    const ChatTemplate t = ChatTemplate::from_jinja_text(file["template"].get<std::string>(), token("bos_token"),
                                                         token("eos_token"));
    for (const ojson& c : file["cases"]) {
      if (!has_tool_parts(c) || !c.value("add_generation_prompt", false)) continue;
      const std::string where = entry.path().filename().string() + " case " + c["id"].dump();
      try {
        if (c.value("expect_error", false)) {
          EXPECT_ANY_THROW(render(t, request_body(c, Arguments::as_given))) << where;
          ++n_errors;
        } else if (has_string_arguments(c)) {
          // transformers prints the string; seam passes the object, as vLLM does.
          const std::string text = render(t, request_body(c, Arguments::as_given));
          EXPECT_EQ(text, render(t, request_body(c, Arguments::to_objects))) << where;
          EXPECT_NE(text, c["expected"].get<std::string>()) << where;
          ++n_converted;
        } else {
          EXPECT_EQ(render(t, request_body(c, Arguments::as_given)), c["expected"].get<std::string>()) << where;
          EXPECT_EQ(render(t, request_body(c, Arguments::to_strings)), c["expected"].get<std::string>())
              << where << " (arguments sent as JSON text)";
          ++n_cases;
        }
      } catch (const std::exception& e) {
        ADD_FAILURE() << where << ": " << e.what();
      }
    }
  }
  // 5 templates x 8 tool cases.
  EXPECT_EQ(n_cases + n_errors + n_converted, 40);
  std::printf("%d byte-exact, %d template errors, %d with string arguments converted\n", n_cases, n_errors,
              n_converted);
}

}  // namespace
}  // namespace seam
