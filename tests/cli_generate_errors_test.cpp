// Finding 12 of issue 26: every error path of `seam generate` (and serve's
// start-up) ends with a clean message and a non-zero exit status -- never
// std::terminate, a signal, or an "internal error". Several prompts with bad
// ones among them report each bad one and generate nothing.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include "test_util.h"

namespace seam::test {
namespace {

struct CliRun {
  bool exited = false;  // false: killed by a signal (std::terminate aborts)
  int status = -1;
  std::string out, err;
};

CliRun run(const std::string& args) {
  const std::string dir = make_temp_dir("cli_err");
  const std::string cmd = std::string(SEAM_BINARY) + " " + args + " > " + dir + "/out 2> " + dir + "/err";
  const int rc = std::system(cmd.c_str());
  CliRun r;
  r.exited = WIFEXITED(rc) && WEXITSTATUS(rc) < 128;  // the shell reports a signal as 128 + n
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = read_file(dir + "/out");
  r.err = read_file(dir + "/err");
  return r;
}

void expect_clean_failure(const CliRun& r, const std::string& needle, const std::string& what) {
  EXPECT_TRUE(r.exited) << what << ": died by a signal; stderr:\n" << r.err;
  EXPECT_NE(r.status, 0) << what;
  for (const char* bad : {"terminate called", "internal error", "json.exception", "Aborted"})
    EXPECT_EQ(r.err.find(bad), std::string::npos) << what << ": " << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << what << ": expected '" << needle << "' in:\n" << r.err;
}

std::string gen(const std::string& args) { return "generate --device cpu --model-path " + stories_dir() + " " + args; }

TEST(CliGenerateErrors, PromptLongerThanTheContextBesideAGoodOne) {
  std::string long_prompt;
  for (int i = 0; i < 40; ++i) long_prompt += "word ";
  const CliRun r = run(gen("--context-length 16 --max-new-tokens 2 --prompt '" + long_prompt + "' --prompt hi"));
  expect_clean_failure(r, "prompt 1: the prompt has more than 15 tokens", "long prompt");
  EXPECT_EQ(r.err.find("prompt 2:"), std::string::npos) << r.err;  // the good one is not an error
  EXPECT_NE(r.err.find("1 of 2 prompts cannot run"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;  // nothing generated
}

TEST(CliGenerateErrors, EveryBadPromptIsReported) {
  const std::string dir = make_temp_dir("cli_err_prompts");
  std::string long_prompt;
  for (int i = 0; i < 40; ++i) long_prompt += "word ";
  write_file(dir + "/p.jsonl", "{\"prompt\": \"" + long_prompt + "\"}\n{\"prompt\": \"ok\"}\n" +
                                   "{\"input_ids\": [1, 600]}\n{\"prompt\": \"x\", \"top_p\": 0}\n");
  const CliRun r = run(gen("--context-length 16 --max-new-tokens 2 --prompts-file " + dir + "/p.jsonl"));
  expect_clean_failure(r, "p.jsonl:1: the prompt has more than 15 tokens", "prompts file");
  EXPECT_NE(r.err.find("p.jsonl:3: prompt token id 600"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("p.jsonl:4: top_p"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("p.jsonl:2:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("3 of 4 prompts cannot run"), std::string::npos) << r.err;
}

TEST(CliGenerateErrors, BadFlagsMissingModelAndBadFiles) {
  const std::string dir = make_temp_dir("cli_err_files");
  expect_clean_failure(run(gen("--prompt hi --no-such-flag")), "no-such-flag", "unknown flag");
  expect_clean_failure(run(gen("--prompt hi --max-new-tokens lots")), "max-new-tokens", "flag value");
  expect_clean_failure(run(gen("")), "give --prompt TEXT or --prompts-file FILE", "no prompt");
  expect_clean_failure(run("generate --device cpu --model-path " + dir + "/none --prompt hi"), dir + "/none",
                       "missing model");
  expect_clean_failure(run(gen("--prompt hi --device tpu")), "--device", "bad device");
  expect_clean_failure(run(gen("--prompt hi --log-level chatty")), "--log-level", "bad log level");
  expect_clean_failure(run(gen("--prompts-file " + dir + "/missing.jsonl")), "missing.jsonl: cannot open",
                       "missing prompts file");
  write_file(dir + "/empty.jsonl", "\n  \n");
  expect_clean_failure(run(gen("--prompts-file " + dir + "/empty.jsonl")), "empty.jsonl: no prompts", "empty file");
  write_file(dir + "/bad.jsonl", "{\"prompt\": \"a\"}\n{\"prompt\": \"b\", \"temperature\": 1e400}\n{\"prompt\": 3}\n");
  const CliRun bad = run(gen("--prompts-file " + dir + "/bad.jsonl"));
  expect_clean_failure(bad, "bad.jsonl:2: malformed JSON: 'temperature' is out of range", "number overflow");
  EXPECT_NE(bad.err.find("bad.jsonl:3: needs a string 'prompt'"), std::string::npos) << bad.err;  // every bad line
  EXPECT_NE(bad.err.find("2 of 3 lines"), std::string::npos) << bad.err;
  write_file(dir + "/syntax.jsonl", "{\"prompt\": \"a\",}\n");
  expect_clean_failure(run(gen("--prompts-file " + dir + "/syntax.jsonl")), "syntax.jsonl:1: malformed JSON",
                       "syntax error");
  write_file(dir + "/utf8.jsonl", "{\"prompt\": \"\xff\"}\n");
  expect_clean_failure(run(gen("--prompts-file " + dir + "/utf8.jsonl")), "utf8.jsonl:1", "invalid UTF-8");
  write_file(dir + "/sampling.jsonl", "{\"prompt\": \"a\", \"top_p\": 0}\n");
  expect_clean_failure(run(gen("--prompts-file " + dir + "/sampling.jsonl")), "sampling.jsonl:1:", "bad top_p");
}

TEST(CliServeErrors, StartUpErrorsExitCleanly) {
  const std::string dir = make_temp_dir("serve_err");
  expect_clean_failure(run("serve --model-path " + stories_dir() + " --no-such-flag"), "no-such-flag", "unknown flag");
  expect_clean_failure(run("serve --device cpu --port 0 --model-path " + dir + "/none"), dir + "/none",
                       "missing model");
  expect_clean_failure(
      run("serve --device cpu --port 0 --model-path " + stories_dir() + " --chat-template " + dir + "/none.jinja"),
      "--chat-template", "bad chat template");
  expect_clean_failure(run("serve --device cpu --port 0 --model-path " + stories_dir() + " --log-requests-level 7"),
                       "log-requests-level", "bad request log level");
  expect_clean_failure(run("serve --device cpu --port 0 --model-path " + stories_dir() + " --max-queued-requests -1"),
                       "--max-queued-requests", "negative queue");
}

}  // namespace
}  // namespace seam::test
