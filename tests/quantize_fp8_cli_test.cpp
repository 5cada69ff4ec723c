// `seam quantize-fp8` (the FP8 checkpoint tool) and the FP8 flags of `seam generate`: a
// written checkpoint generates, --quantization fp8 and --kv-cache-dtype fp8_e4m3 run, and
// bad values end with a clean message and a non-zero status.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>

#include "test_util.h"

namespace seam::test {
namespace {

struct CliRun {
  int status = -1;
  std::string out, err;
};

CliRun run(const std::string& args) {
  const std::string dir = make_temp_dir("q8cli");
  const std::string cmd = std::string(SEAM_BINARY) + " " + args + " > " + dir + "/out 2> " + dir + "/err";
  const int rc = std::system(cmd.c_str());
  CliRun r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = read_file(dir + "/out");
  r.err = read_file(dir + "/err");
  std::filesystem::remove_all(dir);
  return r;
}

std::string gen(const std::string& model, const std::string& extra) {
  return "generate --device cpu --model-path " + model + " --prompt 'Once upon a time' --max-new-tokens 8 " + extra;
}

TEST(QuantizeFp8Cli, WritesACheckpointThatGenerates) {
  const std::string dir = make_temp_dir("q8out");
  CliRun q = run("quantize-fp8 --model-path " + stories_dir() + " --out " + dir + " --format fp8-block");
  ASSERT_EQ(q.status, 0) << q.err;
  EXPECT_TRUE(std::filesystem::exists(dir + "/model.safetensors"));
  EXPECT_NE(read_file(dir + "/config.json").find("weight_block_size"), std::string::npos);
  CliRun g = run(gen(dir, ""));
  EXPECT_EQ(g.status, 0) << g.err;
  EXPECT_NE(g.out.find("Once upon a time"), std::string::npos) << g.out;
  std::filesystem::remove_all(dir);
}

TEST(QuantizeFp8Cli, FlagsRunAndBadValuesFailCleanly) {
  EXPECT_EQ(run(gen(stories_dir(), "--quantization fp8 --kv-cache-dtype fp8_e4m3")).status, 0);
  struct Bad {
    std::string args, needle;
  };
  for (const Bad& b : std::vector<Bad>{
           {"quantize-fp8 --model-path " + stories_dir() + " --out /tmp/x --format int4",
            "--format: 'int4' is not one of ct-channel"},
           {"quantize-fp8 --model-path /nonexistent --out /tmp/x", "/nonexistent"},
           {gen(stories_dir(), "--quantization awq"), "--quantization: 'awq' is not one of fp8, none"},
           {gen(stories_dir(), "--kv-cache-dtype fp8_e5m2"), "fp8_e5m2 is not supported"}}) {
    CliRun r = run(b.args);
    EXPECT_NE(r.status, 0) << b.args;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(b.needle), std::string::npos) << b.args << ": " << r.err;
  }
}

}  // namespace
}  // namespace seam::test
