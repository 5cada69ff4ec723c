// The official openai npm client against a real `seam serve` process:
// tests/e2e/openai_client_test.mjs (completions, chat, streaming, golden
// greedy texts; tools and reasoning_content against a second server). Needs node and tests/e2e/node_modules (tests/e2e/setup.sh);
// without them the test is skipped, except under CI=true where it fails.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "server_probe.h"
#include "server_process.h"
#include "test_util.h"

namespace seam {
namespace {

bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

TEST(ServerE2e, OpenAiNodeClient) {
  const std::string e2e_dir = std::string(SEAM_SOURCE_DIR) + "/tests/e2e";
  std::string missing;
  if (std::system("command -v node > /dev/null 2>&1") != 0) {
    missing = "node is not installed";
  } else if (!std::filesystem::exists(e2e_dir + "/node_modules/openai/package.json")) {
    missing = "tests/e2e/node_modules is missing (run tests/e2e/setup.sh)";
  }
  if (!missing.empty()) {
    if (in_ci()) FAIL() << missing << " (CI=true: the e2e test must run)";
    GTEST_SKIP() << missing;
  }

  test::ServerProcess server;
  // A second server for tools and reasoning: a template that prints tools and
  // tool turns (the script computes the same text), hermes and deepseek-r1.
  const std::string dir = test::make_temp_dir("e2e");
  test::write_file(dir + "/tools.jinja",
                   "{% if tools %}TOOLS:{% for t in tools %}{{ t | tojson }}{% endfor %}{{ '\\n' }}{% endif %}"
                   "{% for m in messages %}{{ m.role }}:{{ m.content if m.content is not none else 'None' }}"
                   "{% for c in m.tool_calls or [] %}[{{ c.function.name }} {{ c.function.arguments | tojson }} "
                   "city={{ c.function.arguments.city }}]{% endfor %}"
                   "{% if m.tool_call_id is defined %}({{ m.tool_call_id }}){% endif %}{{ '\\n' }}{% endfor %}");
  test::ServerProcess tools_server({"--chat-template", dir + "/tools.jinja", "--tool-call-parser", "hermes",
                                    "--reasoning-parser", "deepseek-r1"});
  const std::string out = dir + "/node.log";
  const std::string cmd = "node " + e2e_dir + "/openai_client_test.mjs " + std::to_string(server.port()) + " " +
                          test::shared_dir() + "/golden/stories260K_greedy.json " +
                          std::to_string(tools_server.port()) + " > " + out + " 2>&1";
  const int rc = std::system(cmd.c_str());
  const std::string log = test::read_file(out);
  EXPECT_EQ(rc, 0) << "node client failed:\n" << log << "\nserver log:\n" << server.log();
  EXPECT_NE(log.find("all checks passed"), std::string::npos) << log;
  EXPECT_NE(log.find("tools and reasoning"), std::string::npos) << log;
  std::printf("%s", log.c_str());
}

// seam bench-serving against seam serve: every request completes, and with
// range ratio 1 the token totals are exact (ids prompts, ignore_eos, usage).
TEST(ServerE2e, BenchServingRuns) {
  test::ServerProcess server;
  const std::string dir = test::make_temp_dir("bench");
  const std::string cmd = std::string(SEAM_BINARY) + " bench-serving --port " + std::to_string(server.port()) +
                          " --num-prompts 24 --random-input-len 40 --random-output-len 12 --random-range-ratio 1" +
                          " --max-concurrency 8 --seed 5 --output-file " + dir + "/out.jsonl > " + dir +
                          "/stdout.txt 2>&1";
  const int rc = std::system(cmd.c_str());
  const std::string out = test::read_file(dir + "/stdout.txt");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("Serving Benchmark Result"), std::string::npos) << out;
  const auto j = nlohmann::json::parse(test::read_file(dir + "/out.jsonl"));
  EXPECT_EQ(j["completed"], 24);
  EXPECT_EQ(j["failed"], 0);
  EXPECT_EQ(j["total_input_tokens"], 24 * 40);
  EXPECT_EQ(j["total_output_tokens"], 24 * 12);
  EXPECT_EQ(j["max_concurrency"], 8);
  EXPECT_GT(j["output_throughput"].get<double>(), 0.0);
  EXPECT_GT(j["mean_ttft_ms"].get<double>(), 0.0);
  EXPECT_GT(j["mean_tpot_ms"].get<double>(), 0.0);
  EXPECT_GT(j["p99_itl_ms"].get<double>(), 0.0);
  EXPECT_LE(j["median_e2e_latency_ms"].get<double>(), j["p99_e2e_latency_ms"].get<double>());
  std::printf("%s", out.c_str());
}

// --json-schema FILE sends every request with response_format json_schema (issue 21's benchmark
// runs bench/schemas/nested.json): every request completes and the server counts each one (and
// the warm-up) as constrained, the nested schema compiled once and then taken from the cache.
TEST(ServerE2e, BenchServingWithJsonSchema) {
  test::ServerProcess server;
  const std::string dir = test::make_temp_dir("bench_schema");
  const std::string cmd = std::string(SEAM_BINARY) + " bench-serving --port " + std::to_string(server.port()) +
                          " --num-prompts 8 --random-input-len 20 --random-output-len 24 --random-range-ratio 1" +
                          " --max-concurrency 4 --json-schema " + SEAM_SOURCE_DIR + "/bench/schemas/nested.json" +
                          " --output-file " + dir + "/out.jsonl > " + dir + "/stdout.txt 2>&1";
  const int rc = std::system(cmd.c_str());
  const std::string out = test::read_file(dir + "/stdout.txt");
  ASSERT_EQ(rc, 0) << out;
  const auto j = nlohmann::json::parse(test::read_file(dir + "/out.jsonl"));
  EXPECT_EQ(j["completed"], 8);
  EXPECT_EQ(j["failed"], 0);
  EXPECT_NE(j["json_schema"].get<std::string>().find("nested.json"), std::string::npos);
  EXPECT_EQ(test::settled_metric(server.port(), "seam_grammar_requests_total"), 9);  // 8 and the warm-up
  EXPECT_EQ(test::settled_metric(server.port(), "seam_grammar_cache_total{result=\"miss\"}"), 1);
  // A file that is not a schema is the command's error, before any request.
  const std::string bad = std::string(SEAM_BINARY) + " bench-serving --port " + std::to_string(server.port()) +
                          " --num-prompts 1 --json-schema " + dir + "/stdout.txt > " + dir + "/bad.txt 2>&1";
  EXPECT_NE(std::system(bad.c_str()), 0);
  EXPECT_NE(test::read_file(dir + "/bad.txt").find("--json-schema"), std::string::npos);
}

// --logprobs K makes every request ask for logprobs (the GPU comparison of serving with and
// without them runs this flag); the requests still all complete with exact token totals.
TEST(ServerE2e, BenchServingWithLogprobs) {
  test::ServerProcess server;
  const std::string dir = test::make_temp_dir("bench_lp");
  const std::string cmd = std::string(SEAM_BINARY) + " bench-serving --port " + std::to_string(server.port()) +
                          " --num-prompts 8 --random-input-len 20 --random-output-len 6 --random-range-ratio 1" +
                          " --max-concurrency 4 --logprobs 5 --output-file " + dir + "/out.jsonl > " + dir +
                          "/stdout.txt 2>&1";
  const int rc = std::system(cmd.c_str());
  const std::string out = test::read_file(dir + "/stdout.txt");
  ASSERT_EQ(rc, 0) << out;
  const auto j = nlohmann::json::parse(test::read_file(dir + "/out.jsonl"));
  EXPECT_EQ(j["completed"], 8);
  EXPECT_EQ(j["failed"], 0);
  EXPECT_EQ(j["total_output_tokens"], 8 * 6);
  EXPECT_EQ(j["logprobs"], 5);
  const std::string bad = std::string(SEAM_BINARY) + " bench-serving --port " + std::to_string(server.port()) +
                          " --num-prompts 1 --logprobs 21 > " + dir + "/bad.txt 2>&1";
  EXPECT_NE(std::system(bad.c_str()), 0) << "--logprobs 21 is refused";
}

}  // namespace
}  // namespace seam
