// The five shared Hub chat templates (../shared/chat_templates), 22
// conversations each, through `seam chat-template` as a user runs it: every
// rendered text must equal transformers' byte for byte, every case
// transformers refuses must be an error, and a template's own
// raise_exception message must come back verbatim.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "test_util.h"

namespace seam::test {
namespace {

using nlohmann::ordered_json;

std::vector<std::string> golden_files() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(shared_dir() + "/chat_templates"))
    if (e.path().extension() == ".json") files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(ChatTemplateGolden, AllFiveTemplatesArePresent) { EXPECT_EQ(golden_files().size(), 5u); }

class ChatTemplateGoldenFile : public ::testing::TestWithParam<std::string> {};

TEST_P(ChatTemplateGoldenFile, EveryCaseMatchesTransformers) {
  const ordered_json golden = ordered_json::parse(read_file(shared_dir() + "/chat_templates/" + GetParam()));
  const auto& cases = golden["cases"];
  ASSERT_EQ(cases.size(), 22u);

  // A model folder holding only tokenizer_config.json with the template and its special tokens
  // (null: the token is not passed to the template, as in the goldens).
  const std::string dir = make_temp_dir("chat_golden");
  ordered_json config = {{"chat_template", golden["template"]},
                         {"bos_token", golden["bos_token"]},
                         {"eos_token", golden["eos_token"]}};
  write_file(dir + "/tokenizer_config.json", config.dump());
  std::string input;
  for (const auto& c : cases) {
    ordered_json line = {{"messages", c["messages"]},
                         {"tools", c["tools"]},
                         {"add_generation_prompt", c["add_generation_prompt"]},
                         {"kwargs", c["kwargs"]}};
    input += line.dump() + "\n";
  }
  write_file(dir + "/in.jsonl", input);
  // strftime_now is frozen at the goldens' date (their README).
  const std::string cmd = std::string(SEAM_BINARY) + " chat-template --tokenizer " + dir +
                          " --fixed-time 2026-07-26T00:00:00 < " + dir + "/in.jsonl > " + dir + "/out 2> " + dir +
                          "/err";
  const int rc = std::system(cmd.c_str());
  ASSERT_EQ(WEXITSTATUS(rc), 0) << read_file(dir + "/err");

  std::vector<ordered_json> results;
  std::stringstream out(read_file(dir + "/out"));
  for (std::string l; std::getline(out, l);) results.push_back(ordered_json::parse(l));
  ASSERT_EQ(results.size(), cases.size());
  int n_match = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    const auto& r = results[i];
    const std::string id = c["id"].get<std::string>();
    if (c["expect_error"].get<bool>()) {
      ASSERT_TRUE(r.contains("error")) << id << ": transformers raises " << c["error"] << ", seam rendered " << r.dump();
      if (c.value("raised_by_template", false)) {
        EXPECT_EQ(r["error"], c["error"]) << id;
        EXPECT_EQ(r["error_kind"], "raised") << id;
      }
      ++n_match;
    } else {
      ASSERT_TRUE(r.contains("text")) << id << ": " << r.dump();
      EXPECT_EQ(r["text"].get<std::string>(), c["expected"].get<std::string>()) << id;
      n_match += r["text"] == c["expected"];
    }
  }
  EXPECT_EQ(n_match, 22);
}

INSTANTIATE_TEST_SUITE_P(SharedTemplates, ChatTemplateGoldenFile, ::testing::ValuesIn(golden_files()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param.substr(0, info.param.size() - 5);
                           for (char& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

}  // namespace
}  // namespace seam::test
