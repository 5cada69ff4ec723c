// bench-serving pieces: sglang's random dataset, numpy-style percentiles,
// the summary figures (TPOT, throughputs) and --base-url parsing.
#include <gtest/gtest.h>

#include <set>

#include "bench_serving/bench_metrics.h"
#include "bench_serving/random_dataset.h"
#include "bench_serving/sse_client.h"
#include "core/error.h"

namespace seam {
namespace {

TEST(BenchServing, RandomDatasetLengthsAndIds) {
  RandomDatasetSpec s;
  s.n_prompts = 500;
  s.input_len = 100;
  s.output_len = 40;
  s.range_ratio = 0.5;
  s.vocab_size = 512;
  s.seed = 3;
  const auto reqs = make_random_dataset(s);
  ASSERT_EQ(reqs.size(), 500u);
  std::set<size_t> in_lens;
  std::set<int> out_lens;
  for (size_t i = 0; i < reqs.size(); ++i) {
    const auto& r = reqs[i];
    EXPECT_GE(r.prompt_ids.size(), 50u);
    EXPECT_LE(r.prompt_ids.size(), 100u);
    EXPECT_GE(r.output_len, 20);
    EXPECT_LE(r.output_len, 40);
    in_lens.insert(r.prompt_ids.size());
    out_lens.insert(r.output_len);
    // sglang: ids (offset + i + j) % vocab: consecutive ids step by one.
    for (size_t j = 1; j < r.prompt_ids.size(); ++j)
      ASSERT_EQ(r.prompt_ids[j], (r.prompt_ids[j - 1] + 1) % 512);
    for (int32_t id : r.prompt_ids) ASSERT_TRUE(id >= 0 && id < 512);
  }
  // Both ends of the range are reachable; the draw is not constant.
  EXPECT_TRUE(in_lens.count(50) && in_lens.count(100));
  EXPECT_TRUE(out_lens.count(20) && out_lens.count(40));
  // Same seed, same dataset; ratio 1 gives exact lengths.
  EXPECT_EQ(make_random_dataset(s)[7].prompt_ids, reqs[7].prompt_ids);
  s.range_ratio = 1.0;
  for (const auto& r : make_random_dataset(s)) {
    EXPECT_EQ(r.prompt_ids.size(), 100u);
    EXPECT_EQ(r.output_len, 40);
  }
  s.range_ratio = 1.5;
  EXPECT_THROW(make_random_dataset(s), Error);
}

TEST(BenchServing, PercentilesLikeNumpy) {
  // numpy.percentile([1, 2, 3, 4, 10], [50, 90, 99]) = 3, 7.6, 9.76
  const Percentiles p = percentiles({10, 2, 3, 1, 4});
  EXPECT_DOUBLE_EQ(p.mean, 4.0);
  EXPECT_DOUBLE_EQ(p.median, 3.0);
  EXPECT_NEAR(p.p90, 7.6, 1e-12);
  EXPECT_NEAR(p.p99, 9.76, 1e-12);
  EXPECT_DOUBLE_EQ(p.max, 10.0);
  EXPECT_DOUBLE_EQ(percentiles({}).mean, 0.0);
}

TEST(BenchServing, Summary) {
  RequestRecord a;
  a.success = true;
  a.prompt_len = 10;
  a.output_len = 11;
  a.ttft_s = 0.1;
  a.latency_s = 1.1;  // TPOT = (1.1 - 0.1) / 10 = 0.1 s
  a.itl_s = {0.05, 0.15};
  RequestRecord b = a;
  b.output_len = 1;  // no TPOT for a single token
  RequestRecord c;
  c.error = "boom";
  const BenchSummary s = summarize({a, b, c}, 2.0);
  EXPECT_EQ(s.completed, 2);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.first_error, "boom");
  EXPECT_EQ(s.total_input, 20);
  EXPECT_EQ(s.total_output, 12);
  EXPECT_DOUBLE_EQ(s.request_throughput, 1.0);
  EXPECT_DOUBLE_EQ(s.output_throughput, 6.0);
  EXPECT_DOUBLE_EQ(s.total_throughput, 16.0);
  EXPECT_NEAR(s.tpot_ms.mean, 100.0, 1e-9);
  EXPECT_NEAR(s.itl_ms.mean, 100.0, 1e-9);
  EXPECT_NEAR(s.ttft_ms.median, 100.0, 1e-9);
  EXPECT_NEAR(s.concurrency, 1.1, 1e-12);
  const auto j = summary_json(s, {{"backend", "seam"}});
  EXPECT_EQ(j["backend"], "seam");
  EXPECT_EQ(j["completed"], 2);
  EXPECT_TRUE(j.contains("p99_itl_ms"));
  EXPECT_NE(format_table(s, {{"backend", "seam"}}).find("Mean TTFT (ms)"), std::string::npos);
}

TEST(BenchServing, BaseUrl) {
  HttpTarget t = parse_base_url("http://10.0.0.1:8000/");
  EXPECT_EQ(t.host, "10.0.0.1");
  EXPECT_EQ(t.port, 8000);
  EXPECT_EQ(parse_base_url("http://localhost").port, 80);
  EXPECT_THROW(parse_base_url("https://x:1"), Error);
  EXPECT_THROW(parse_base_url("http://x:1/v1"), Error);
  EXPECT_THROW(parse_base_url("http://x:port"), Error);
}

}  // namespace
}  // namespace seam
