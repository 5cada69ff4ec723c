// HfChatTemplate (where a model folder keeps its template, which named
// template applies, the variables a template sees) and the line loop of
// `seam chat-template`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/chat_template_command.h"
#include "test_util.h"

namespace seam {
namespace {

using nlohmann::ordered_json;

jinja::ChatRequest request(const std::string& line) { return jinja::ChatRequest::from_json(ordered_json::parse(line)); }

std::string folder_with(const ordered_json& config, const std::string& jinja_file = "") {
  const std::string dir = test::make_temp_dir("chat_tpl");
  test::write_file(dir + "/tokenizer_config.json", config.dump());
  if (!jinja_file.empty()) test::write_file(dir + "/chat_template.jinja", jinja_file);
  return dir;
}

TEST(HfChatTemplate, NamedTemplatesPickToolUseWhenToolsAreGiven) {
  const std::string dir = folder_with({{"chat_template",
                                        {{{"name", "default"}, {"template", "D{{ messages|length }}"}},
                                         {{"name", "tool_use"}, {"template", "T{{ tools|length }}"}},
                                         {{"name", "rag"}, {"template", "R{{ documents[0].title }}"}}}}});
  const auto t = jinja::HfChatTemplate::from_folder(dir, "", {});
  EXPECT_EQ(t.render(request(R"({"messages": [{"role": "user", "content": "x"}]})")), "D1");
  EXPECT_EQ(t.render(request(R"({"messages": [], "tools": [{"type": "function"}, {}]})")), "T2");
  // A name given on the command line picks that one; so does a file.
  const auto rag = jinja::HfChatTemplate::from_folder(dir, "rag", {});
  EXPECT_EQ(rag.render(request(R"({"messages": [], "documents": [{"title": "A"}]})")), "RA");
  test::write_file(dir + "/override.jinja", "F{{ add_generation_prompt }}\n");
  const auto file = jinja::HfChatTemplate::from_folder(dir, dir + "/override.jinja", {});
  EXPECT_EQ(file.render(request(R"({"messages": [], "add_generation_prompt": true})")), "FTrue");
  EXPECT_THROW(jinja::HfChatTemplate::from_folder(dir, "no_such_name", {}), Error);
}

TEST(HfChatTemplate, SpecialTokensAndTheJinjaFile) {
  // bos as an AddedToken dict, eos null (not passed: undefined in the template).
  const std::string dir = folder_with({{"chat_template", "config"},
                                       {"bos_token", {{"content", "<s>"}, {"lstrip", false}}},
                                       {"eos_token", nullptr}},
                                      "{{ bos_token }}|{{ eos_token is defined }}|{{ tools }}|{{ documents }}");
  // chat_template.jinja beside the config wins over the config's template, as in transformers.
  const auto t = jinja::HfChatTemplate::from_folder(dir, "", {});
  EXPECT_EQ(t.render(request(R"({"messages": []})")), "<s>|False|None|None");
  EXPECT_EQ(t.bos_token(), "<s>");
  EXPECT_FALSE(t.eos_token().has_value());
}

TEST(HfChatTemplate, KwargsBecomeVariablesAndDocumentsMayComeFromThem) {
  const auto t = jinja::HfChatTemplate::from_text(
      "{{ enable_thinking }} {{ documents|map(attribute='t')|join }} {{ bos_token }}", "<b>", std::nullopt, {});
  EXPECT_EQ(t.render(request(R"({"messages": [], "kwargs": {"enable_thinking": false, "documents": [{"t": "x"}]}})")),
            "False x <b>");
  // A kwarg may override a special token, as transformers merges them.
  EXPECT_EQ(t.render(request(R"({"messages": [], "kwargs": {"bos_token": "B", "enable_thinking": 1, "documents": []}})")), "1  B");
  EXPECT_THROW(request(R"({"messages": [], "kwargs": {"messages": []}})"), Error);
  EXPECT_THROW(request(R"({"messages": "hi"})"), Error);
  EXPECT_THROW(request(R"({"messages": [], "tools": {}})"), Error);
  EXPECT_THROW(request(R"({"messages": [], "add_generation_prompt": "yes"})"), Error);
}

TEST(HfChatTemplate, AFolderWithoutATemplateIsAClearError) {
  const std::string dir = folder_with({{"bos_token", "<s>"}});
  try {
    jinja::HfChatTemplate::from_folder(dir, "", {});
    FAIL() << "loaded a folder with no template";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no chat template"), std::string::npos) << e.what();
  }
  const std::string bad = folder_with({{"chat_template", "{% if %}"}});
  EXPECT_THROW(jinja::HfChatTemplate::from_folder(bad, "", {}), Error);
}

TEST(ChatTemplateCli, LinesInLinesOut) {
  const auto t = jinja::HfChatTemplate::from_text(
      "{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
      "<{{ m.role }}>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}",
      std::nullopt, std::nullopt, {});
  std::istringstream in(
      "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"add_generation_prompt\": true}\n"
      "\n"
      "{\"messages\": [{\"role\": \"system\", \"content\": \"s\"}]}\n"
      "not json\n"
      "{\"messages\": [{\"role\": \"user\", \"content\": \"é\"}]}\n");
  std::ostringstream out, err;
  EXPECT_EQ(cli::chat_template_lines(t, in, out, err), 1);  // one malformed line
  // One output line per conversation, in order; blank lines are skipped.
  std::vector<ordered_json> lines;
  std::istringstream o(out.str());
  for (std::string l; std::getline(o, l);) lines.push_back(ordered_json::parse(l));
  ASSERT_EQ(lines.size(), 4u) << out.str();
  EXPECT_EQ(lines[0], ordered_json({{"text", "<user>hi<assistant>"}}));
  EXPECT_EQ(lines[1], ordered_json({{"error", "System role not supported"}, {"error_kind", "raised"}}));
  EXPECT_EQ(lines[2]["error_kind"], "request");
  EXPECT_EQ(lines[2]["error"].get<std::string>().rfind("not valid JSON", 0), 0u);
  EXPECT_EQ(lines[3], ordered_json({{"text", "<user>é"}}));
  EXPECT_NE(err.str().find("line 4: not valid JSON"), std::string::npos) << err.str();
}

}  // namespace
}  // namespace seam
