// The five shared Hub chat templates (../shared/chat_templates), 22
// conversations each, and the families' templates the project keeps
// (tests/data/chat_templates: Gemma 3, Phi-4-mini, Mistral v0.1; the same 22
// conversations and each family's own, written by tools/make_chat_template_goldens.py),
// through `seam chat-template` as a user runs it: every rendered text must
// equal transformers' byte for byte, every case transformers refuses must be
// an error, and a template's own raise_exception message must come back verbatim.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "test_util.h"

namespace seam::test {
namespace {

using nlohmann::ordered_json;

constexpr size_t k_n_shared_conversations = 22;

std::string shared_goldens_dir() { return shared_dir() + "/chat_templates"; }
std::string family_goldens_dir() { return std::string(SEAM_SOURCE_DIR) + "/tests/data/chat_templates"; }

// The golden files of `dir`, as full paths.
std::vector<std::string> golden_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(ChatTemplateGolden, AllFiveTemplatesArePresent) { EXPECT_EQ(golden_files(shared_goldens_dir()).size(), 5u); }
TEST(ChatTemplateGolden, AllThreeFamilyTemplatesArePresent) {
  EXPECT_EQ(golden_files(family_goldens_dir()).size(), 3u);
}

// The family goldens start with the shared 22 conversations, unchanged (so every
// template meets the same conversations), then add their own.
TEST(ChatTemplateGolden, FamilyGoldensStartWithTheSharedConversations) {
  const ordered_json shared =
      ordered_json::parse(read_file(shared_goldens_dir() + "/Qwen__Qwen2.5-7B-Instruct.json"))["cases"];
  ASSERT_EQ(shared.size(), k_n_shared_conversations);
  for (const std::string& path : golden_files(family_goldens_dir())) {
    const ordered_json cases = ordered_json::parse(read_file(path))["cases"];
    ASSERT_GT(cases.size(), k_n_shared_conversations) << path;
    for (size_t i = 0; i < k_n_shared_conversations; ++i)
      for (const char* key : {"id", "messages", "tools", "add_generation_prompt", "kwargs"})
        EXPECT_EQ(cases[i][key], shared[i][key]) << path << " case " << i << " " << key;
  }
}

class ChatTemplateGoldenFile : public ::testing::TestWithParam<std::string> {};

TEST_P(ChatTemplateGoldenFile, EveryCaseMatchesTransformers) {
  const ordered_json golden = ordered_json::parse(read_file(GetParam()));
  const auto& cases = golden["cases"];
  ASSERT_GE(cases.size(), k_n_shared_conversations);

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
  EXPECT_EQ(n_match, static_cast<int>(cases.size()));
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = std::filesystem::path(info.param).stem().string();
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(SharedTemplates, ChatTemplateGoldenFile,
                         ::testing::ValuesIn(golden_files(shared_goldens_dir())), test_name);
INSTANTIATE_TEST_SUITE_P(FamilyTemplates, ChatTemplateGoldenFile,
                         ::testing::ValuesIn(golden_files(family_goldens_dir())), test_name);

}  // namespace
}  // namespace seam::test
