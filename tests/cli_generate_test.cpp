// `seam generate` as a user runs it: --json lines in input order with the
// golden ids, --stats as the last stderr line, and bad input as a one-line
// error with a non-zero exit.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "golden.h"

namespace seam::test {
namespace {

struct CliRun {
  int status;
  std::string out, err;
};

CliRun run(const std::string& args) {
  const std::string dir = make_temp_dir("cli");
  const std::string cmd = std::string(SEAM_BINARY) + " " + args + " > " + dir + "/out 2> " + dir + "/err";
  const int rc = std::system(cmd.c_str());
  return {WEXITSTATUS(rc), read_file(dir + "/out"), read_file(dir + "/err")};
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  for (std::string l; std::getline(ss, l);)
    if (!l.empty()) v.push_back(l);
  return v;
}

TEST(CliGenerate, JsonLinesMatchGoldenInInputOrder) {
  auto cases = golden_cases();
  const std::string dir = make_temp_dir("cli_prompts");
  std::string jsonl;
  for (int i : {2, 0, 1}) {
    nlohmann::json j = {{"prompt", cases[size_t(i)].prompt},
                        {"max_new_tokens", cases[size_t(i)].generated_ids.size()},
                        {"temperature", 0}};
    jsonl += j.dump() + "\n";
  }
  write_file(dir + "/p.jsonl", jsonl);
  CliRun r = run("generate --device cpu --model-path " + stories_dir() + " --prompts-file " + dir +
              "/p.jsonl --json --stats --enable-mixed-chunk --chunked-prefill-size 8");
  ASSERT_EQ(r.status, 0) << r.err;
  auto out = lines(r.out);
  ASSERT_EQ(out.size(), 3u);
  int k = 0;
  for (int i : {2, 0, 1}) {
    auto j = nlohmann::json::parse(out[size_t(k)]);
    EXPECT_EQ(j["index"], k);
    EXPECT_EQ(j["prompt_ids"].get<std::vector<int32_t>>(), cases[size_t(i)].prompt_ids);
    EXPECT_EQ(j["output_ids"].get<std::vector<int32_t>>(), cases[size_t(i)].generated_ids);
    EXPECT_EQ(j["text"], cases[size_t(i)].generated_text);
    EXPECT_EQ(j["finish_reason"], "length");
    ++k;
  }
  auto err = lines(r.err);
  ASSERT_FALSE(err.empty());
  auto stats = nlohmann::json::parse(err.back());
  EXPECT_EQ(stats["finished_requests"], 3);
  EXPECT_EQ(stats["captures_after_seal"], 0);
  EXPECT_GT(stats["mixed"], 0);
  for (const char* key : {"extend", "decode", "retractions", "prefix_cache_hit_tokens", "peak_running_requests",
                          "kv_pool_tokens", "kv_free_tokens"})
    EXPECT_TRUE(stats.contains(key)) << key;
  // Host time per step by phase, and the device step timer (host_time_test checks the values).
  for (const char* key : {"host_schedule_ms_per_step", "host_prepare_ms_per_step", "host_launch_ms_per_step",
                          "host_wait_ms_per_step", "host_process_ms_per_step", "host_detokenize_ms_per_step",
                          "host_handoff_ms_per_step", "forward_ms_per_step", "step_wall_ms_per_step",
                          "gpu_ms_per_step", "gpu_busy_fraction"})
    EXPECT_TRUE(stats.contains(key) && stats[key].get<double>() >= 0) << key;
  EXPECT_GT(stats["gpu_busy_fraction"].get<double>(), 0);
  EXPECT_LE(stats["gpu_busy_fraction"].get<double>(), 1);
}

TEST(CliGenerate, StructuredOutputFieldsOfAPromptsFile) {
  // sglang's json_schema / regex and vLLM's choice on a prompts-file line reach the engine:
  // each answer fits its constraint, --stats counts them; a bad regex is an error naming the
  // line, the field and the reason, and two constraints on one line are refused.
  const std::string dir = make_temp_dir("cli_constraints");
  const nlohmann::json schema = {{"type", "object"},
                                 {"properties", {{"ok", {{"type", "boolean"}}}}},
                                 {"required", {"ok"}}};
  std::string jsonl;
  jsonl += nlohmann::json({{"prompt", "Once upon a time"}, {"temperature", 0}, {"json_schema", schema}}).dump() + "\n";
  jsonl += nlohmann::json({{"prompt", "Once upon a time"}, {"temperature", 0}, {"regex", "(yes|no)-[0-9]{2}"}}).dump() +
           "\n";
  jsonl += nlohmann::json({{"prompt", "Once upon a time"}, {"temperature", 0}, {"choice", {"red", "blue"}}}).dump() +
           "\n";
  write_file(dir + "/p.jsonl", jsonl);
  CliRun r = run("generate --device cpu --model-path " + stories_dir() + " --prompts-file " + dir +
                 "/p.jsonl --json --stats --max-new-tokens 64");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto out = lines(r.out);
  ASSERT_EQ(out.size(), 3u);
  std::vector<std::string> texts;
  for (const std::string& l : out) {
    const auto j = nlohmann::json::parse(l);
    EXPECT_EQ(j["finish_reason"], "stop") << l;
    texts.push_back(j["text"]);
  }
  const auto v = nlohmann::json::parse(texts[0]);
  EXPECT_TRUE(v.is_object() && v.size() == 1 && v["ok"].is_boolean()) << texts[0];
  EXPECT_TRUE(texts[1].size() == 5 || texts[1].size() == 6) << texts[1];
  EXPECT_TRUE(texts[1].rfind("yes-", 0) == 0 || texts[1].rfind("no-", 0) == 0) << texts[1];
  EXPECT_TRUE(texts[2] == "red" || texts[2] == "blue") << texts[2];
  const auto stats = nlohmann::json::parse(lines(r.err).back());
  EXPECT_EQ(stats["grammar_requests"], 3);
  EXPECT_GT(stats["grammar_masked_rows_total"], 0);

  write_file(dir + "/bad.jsonl", "{\"prompt\": \"hi\"}\n{\"prompt\": \"hi\", \"regex\": \"(ab\"}\n");
  r = run("generate --device cpu --model-path " + stories_dir() + " --prompts-file " + dir + "/bad.jsonl");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("bad.jsonl:2: regex: '(' is never closed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nothing was generated"), std::string::npos) << r.err;
  write_file(dir + "/two.jsonl", "{\"prompt\": \"hi\", \"regex\": \"a\", \"choice\": [\"b\"]}\n");
  r = run("generate --device cpu --model-path " + stories_dir() + " --prompts-file " + dir + "/two.jsonl");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("second structured-output constraint"), std::string::npos) << r.err;
}

TEST(CliGenerate, BadInputIsOneLineErrorAndNonZeroExit) {
  const std::string dir = make_temp_dir("cli_bad");
  CliRun r = run("generate --device cpu --model-path " + dir + " --prompt hi");
  EXPECT_NE(r.status, 0);
  EXPECT_EQ(lines(r.err).size(), 1u) << r.err;
  EXPECT_NE(r.err.find("config.json"), std::string::npos) << r.err;
  write_file(dir + "/p.jsonl", "{\"prompt\": 5}\n");
  r = run("generate --device cpu --model-path " + stories_dir() + " --prompts-file " + dir + "/p.jsonl");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("p.jsonl:1"), std::string::npos) << r.err;
  r = run("generate --device cpu --model-path " + stories_dir() + " --prompt hi --dtype bfloat16");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("float32"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace seam::test
