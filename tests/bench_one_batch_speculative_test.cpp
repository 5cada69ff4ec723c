// `seam bench-one-batch`'s speculative modes on stories260K (cpu): the verify sweep prints one
// point per (batch size, k) whose verify step is B x (k + 1) rows through a decode graph key
// captured at start-up; mixed mode carries verify rows beside the chunk; generate mode's
// counts add up (every output token is a step's own token or an accepted draft) with and
// without speculation, and the worst-case drafts are proposed in full and almost never kept.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "test_util.h"

namespace seam::test {
namespace {

struct CliRun {
  int status;
  std::vector<nlohmann::json> json_lines;  // stdout lines that are JSON objects
  std::string err;
};

CliRun bench(const std::string& args) {
  const std::string dir = make_temp_dir("bench_spec");
  const std::string cmd = std::string(SEAM_BINARY) + " bench-one-batch --device cpu --log-level warning --model-path " +
                          stories_dir() + " " + args + " > " + dir + "/out 2> " + dir + "/err";
  const int rc = std::system(cmd.c_str());
  CliRun r{WEXITSTATUS(rc), {}, read_file(dir + "/err")};
  std::stringstream ss(read_file(dir + "/out"));
  for (std::string l; std::getline(ss, l);)
    if (!l.empty() && l[0] == '{') r.json_lines.push_back(nlohmann::json::parse(l));
  return r;
}

TEST(BenchOneBatchSpeculative, VerifySweepRunsEveryPointThroughCapturedKeys) {
  const CliRun r = bench("--mode verify --verify-batch-sizes 1,3 --verify-draft-tokens 1,4 --input-len 24 --reps 2");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(r.json_lines.size(), 5u) << r.err;  // 4 points, then the summary
  int i = 0;
  for (int bs : {1, 3})
    for (int k : {1, 4}) {
      const nlohmann::json& p = r.json_lines[size_t(i++)].at("verify_point");
      EXPECT_EQ(p["batch_size"], bs);
      EXPECT_EQ(p["draft_tokens"], k);
      EXPECT_EQ(p["verify_rows"], bs * (k + 1));
      EXPECT_EQ(p["verify_path"], "decode_graph");
      EXPECT_EQ(p["decode_path"], "decode_graph");
      // The smallest captured key that holds the rows; padding fills the rest.
      EXPECT_EQ(int(p["verify_graph_key"]) - int(p["verify_padding"]), bs * (k + 1));
      EXPECT_GT(p["verify_median_latency_s"], 0.0);
      EXPECT_GT(p["decode_median_latency_s"], 0.0);
      EXPECT_DOUBLE_EQ(double(p["break_even_accept_length"]), double(p["verify_over_decode"]) - 1);
    }
  const nlohmann::json& summary = r.json_lines.back();
  EXPECT_EQ(summary["verify_points"], 4);
  EXPECT_EQ(summary["eager_steps"], 0);
  EXPECT_EQ(summary["captures_after_seal"], 0);
}

TEST(BenchOneBatchSpeculative, MixedModeCarriesVerifyRows) {
  const CliRun r = bench("--mode mixed --batch-size 2 --speculative-num-draft-tokens 3 --input-len 20 --reps 2");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_FALSE(r.json_lines.empty());
  const nlohmann::json& s = r.json_lines.back();
  EXPECT_EQ(s["mixed_decode_rows"], 8);
  EXPECT_EQ(s["mixed_path"], "piecewise_graph");
  EXPECT_EQ(s["captures_after_seal"], 0);
}

TEST(BenchOneBatchSpeculative, GenerateCountsAddUp) {
  const int n_out = 80;
  const std::string common = "--mode generate --batch-size 1 --input-len 12 --output-len " + std::to_string(n_out);
  for (const std::string& extra : std::vector<std::string>{"", "--speculative-algorithm NGRAM",
                                  "--speculative-algorithm NGRAM --worst-case-drafts",
                                  "--speculative-algorithm STANDALONE --speculative-draft-model-path " + stories_dir()}) {
    SCOPED_TRACE(extra);
    const CliRun r = bench(common + " " + extra);
    ASSERT_EQ(r.status, 0) << r.err;
    ASSERT_EQ(r.json_lines.size(), 1u);
    const nlohmann::json& s = r.json_lines[0];
    EXPECT_EQ(s["output_tokens"], n_out);
    const uint64_t steps = s["steps"], accepted = s["speculative_accepted_tokens"],
                   proposed = s["speculative_proposed_tokens"], rows = s["speculative_verify_rows"];
    // One request: each step emits its own token, and a verify row its accepted drafts too.
    EXPECT_EQ(steps + accepted, uint64_t(n_out));
    EXPECT_LE(accepted, proposed);
    uint64_t hist_rows = 0;
    for (auto& [len, n] : s["speculative_accept_length"].items()) hist_rows += n.get<uint64_t>();
    EXPECT_EQ(hist_rows, rows);
    if (extra.empty()) EXPECT_EQ(proposed, 0u);
    if (extra.find("STANDALONE") != std::string::npos) {
      EXPECT_EQ(accepted, proposed);  // the model drafting for itself
      EXPECT_GT(double(s["mean_accept_length"]), 3.0);
    }
    if (extra.find("worst-case") != std::string::npos) {
      // Every decode step but the last verifies k = 4 drafts (fewer only where max_tokens is
      // near), drawn at random from 512 tokens: nearly none is the target's.
      EXPECT_GE(rows + 2, steps);
      EXPECT_GE(proposed, 4 * rows - 6);
      EXPECT_LT(accepted * 20, proposed);
    }
  }
}

TEST(BenchOneBatchSpeculative, BadFlagsAreErrors) {
  CliRun r = bench("--mode decode --verify-batch-sizes 1,2");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("--verify-batch-sizes / --verify-draft-tokens need --mode verify"), std::string::npos) << r.err;
  r = bench("--mode generate --worst-case-drafts");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("worst-case drafts need --speculative-algorithm NGRAM"), std::string::npos) << r.err;
  r = bench("--mode verify --verify-draft-tokens 0,2");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("--verify-draft-tokens: '0' is not a positive integer"), std::string::npos) << r.err;
  r = bench("--mode verify --verify-draft-tokens 2,17");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("verify draft counts must be in [1, 16]"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace seam::test
