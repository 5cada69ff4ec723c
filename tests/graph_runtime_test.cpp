// The graph runtime on the cpu backend: keys, padding, sealing, equality with
// eager (bit-identical on the cpu), garbage in padded rows.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "graph/graph_buckets.h"
#include "runner_fixture.h"

namespace seam::test {
namespace {

GraphConfig small_graphs() {
  GraphConfig g;
  g.decode_buckets = {1, 2, 4, 8, 16};
  g.piecewise_buckets = {4, 8, 16, 32, 64};
  return g;
}

// Poisons every step buffer that padded rows could read with NaN.
void poison(RunnerFixture& f) {
  StepBuffers& b = f.runner->buffers();
  for (Tensor* t : {&b.residual, &b.normed, &b.qkv, &b.attn_out, &b.gate_up, &b.act, &b.last_hidden,
                    &b.logits})
    f.backend.fill(*t, NAN);
}

// Runs fb through forward() (graphs) and forward_eager(); returns the report.
StepReport compare_paths(RunnerFixture& f, const ForwardBatch& fb) {
  const int S = fb.n_seqs();
  std::vector<int32_t> ids_graph, ids_eager;
  StepReport report;
  poison(f);
  f.runner->forward(fb, ids_graph, &report);
  auto logits_graph = f.runner->last_logits(S);
  poison(f);
  f.runner->forward_eager(fb, ids_eager);
  auto logits_eager = f.runner->last_logits(S);
  EXPECT_EQ(ids_graph, ids_eager);
  for (size_t i = 0; i < logits_eager.size(); ++i) {
    EXPECT_TRUE(std::isfinite(logits_graph[i])) << "NaN leaked from padded rows at " << i;
    EXPECT_EQ(std::memcmp(&logits_graph[i], &logits_eager[i], 4), 0)
        << "logit " << i << ": graph " << logits_graph[i] << " eager " << logits_eager[i];
    if (::testing::Test::HasFailure()) break;
  }
  return report;
}

TEST(GraphBuckets, Defaults) {
  auto d = default_decode_buckets(256);
  EXPECT_EQ(std::vector<int>(d.begin(), d.begin() + 6), (std::vector<int>{1, 2, 4, 8, 12, 16}));
  EXPECT_EQ(d.back(), 256);
  EXPECT_EQ(bucket_for(d, 13), 16);
  EXPECT_EQ(bucket_for(d, 257), 0);
  auto p = default_piecewise_buckets(8192);
  EXPECT_EQ(p.front(), 4);
  EXPECT_EQ(bucket_for(p, 33), 48);
  EXPECT_EQ(bucket_for(p, 4097), 4608);
  EXPECT_EQ(p.back(), 8192);
  EXPECT_EQ(parse_bucket_list("8,1,4,4", "--x"), (std::vector<int>{1, 4, 8}));
  EXPECT_THROW(parse_bucket_list("1,x", "--x"), Error);
  EXPECT_THROW(parse_bucket_list("0", "--x"), Error);
}

TEST(GraphRuntime, ExtendAndMixedAroundEveryBucketEqualEager) {
  RunnerFixture f(small_graphs());
  const std::vector<int> buckets = {4, 8, 16, 32, 64};
  std::vector<int> counts = {1};
  for (int b : buckets) counts.push_back(b), counts.push_back(b + 1);
  int seq = 0;
  for (int n : counts) {
    for (bool mixed : {false, true}) {
      // MIXED: n - 3 prefill tokens (with a cached prefix) + 3 decode rows.
      if (mixed && n < 5) continue;
      std::vector<SeqSpec> prefill = {{mixed ? 7 : 0, mixed ? n - 3 : n}};
      std::vector<SeqSpec> decode;
      if (mixed) decode = {{4, 1}, {9, 1}, {2, 1}};
      std::vector<SeqSpec> all = prefill;
      all.insert(all.end(), decode.begin(), decode.end());
      f.fill_prefixes(all, seq);
      ForwardBatch fb = f.batch(prefill, decode, seq);
      SCOPED_TRACE("n=" + std::to_string(n) + (mixed ? " mixed" : " extend"));
      const StepReport r = compare_paths(f, fb);
      const int want = bucket_for(buckets, n);
      if (want == 0) {
        EXPECT_EQ(r.path, StepPath::eager);
        EXPECT_EQ(r.eager_reason, "too many tokens");
      } else {
        EXPECT_EQ(r.path, StepPath::piecewise_graph);
        EXPECT_EQ(r.graph_key, want);
        EXPECT_EQ(r.n_padding, want - n);
      }
      seq += int(all.size());
    }
  }
  EXPECT_GT(f.runner->graph_stats().piecewise_replays_mixed, 0u);
  EXPECT_GT(f.runner->graph_stats().eager_by_reason.at("too many tokens"), 0u);
  EXPECT_EQ(f.runner->graph_stats().captures_after_seal, 0u);
}

TEST(GraphRuntime, DecodeBatchPaddedToBucketEqualsEager) {
  RunnerFixture f(small_graphs());
  for (int bs : {1, 2, 3, 13, 16, 17}) {
    std::vector<SeqSpec> decode;
    for (int i = 0; i < bs; ++i) decode.push_back({1 + (i * 7) % 40, 1});
    f.fill_prefixes(decode);
    SCOPED_TRACE("bs=" + std::to_string(bs));
    const StepReport r = compare_paths(f, f.batch({}, decode));
    const int want = bucket_for({1, 2, 4, 8, 16}, bs);
    if (want == 0) {
      EXPECT_EQ(r.path, StepPath::eager);
      EXPECT_EQ(r.eager_reason, "batch too large");
    } else {
      EXPECT_EQ(r.path, StepPath::decode_graph);
      EXPECT_EQ(r.graph_key, want);
      EXPECT_EQ(r.n_padding, want - bs);
    }
  }
  EXPECT_EQ(f.runner->graph_stats().captures_after_seal, 0u);
  EXPECT_EQ(f.runner->graph_stats().captured_decode_keys, 5);
}

TEST(GraphRuntime, DisabledRunsEagerWithReason) {
  GraphConfig g = small_graphs();
  g.disable_piecewise_cuda_graph = true;
  RunnerFixture f(g);
  std::vector<int32_t> ids;
  StepReport r;
  f.runner->forward(f.batch({{0, 5}}, {}), ids, &r);
  EXPECT_EQ(r.path, StepPath::eager);
  EXPECT_EQ(r.eager_reason, "disabled");
  f.runner->forward(f.batch({}, {{5, 1}}), ids, &r);
  EXPECT_EQ(r.path, StepPath::decode_graph);
}

TEST(GraphRuntime, CpuGraphRecordsInsteadOfRunning) {
  CpuBackend be;
  float x[4] = {1, 2, 3, 4};
  Tensor t(x, DType::f32, Device::cpu, {4});
  be.begin_capture();
  be.fill(t, 7.f);
  auto g = be.end_capture();
  EXPECT_EQ(x[0], 1.f);  // recorded, not run
  be.replay(*g);
  EXPECT_EQ(x[3], 7.f);
}

}  // namespace
}  // namespace seam::test
