// The graph runtime on the cpu backend: keys, padding, sealing, equality with
// eager (bit-identical on the cpu), garbage in padded rows, what padded rows may write,
// stale rows of a larger batch, and many MIXED steps on one key.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

#include "kv/slot_allocator.h"

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

// Every layer's K and V of every slot (the cpu backend's pool is host memory).
std::vector<float> kv_snapshot(RunnerFixture& f) {
  std::vector<float> all;
  for (int l = 0; l < f.config.n_layers; ++l)
    for (const Tensor& t : {f.kv->k_cache(l), f.kv->v_cache(l)}) {
      const float* p = static_cast<const float*>(t.data);
      all.insert(all.end(), p, p + t.numel());
    }
  return all;
}

// The slots whose K or V bytes differ between two snapshots, in any layer.
std::set<int32_t> changed_slots(RunnerFixture& f, const std::vector<float>& a, const std::vector<float>& b) {
  const size_t per_slot = size_t(f.config.n_kv_heads) * size_t(f.config.head_dim);
  const size_t n_slots = size_t(f.kv->shape().n_slots);
  std::set<int32_t> changed;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) changed.insert(int32_t((i / per_slot) % n_slots));
  return changed;
}

TEST(GraphRuntime, PaddedReplayWritesOnlyRealSlotsAndTheScratchSlot) {
  RunnerFixture f(small_graphs());
  struct Case {
    const char* what;
    std::vector<SeqSpec> prefill, decode;
    int key;
  };
  const Case cases[] = {
      {"extend of 5 (bucket 8)", {{0, 5}}, {}, 8},
      {"mixed 2 + 3 decode rows (bucket 8)", {{6, 2}}, {{4, 1}, {9, 1}, {3, 1}}, 8},
      {"decode of 3 rows (bucket 4)", {}, {{7, 1}, {2, 1}, {5, 1}}, 4},
  };
  int seq = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    std::vector<SeqSpec> all = c.prefill;
    all.insert(all.end(), c.decode.begin(), c.decode.end());
    f.fill_prefixes(all, seq);
    const ForwardBatch fb = f.batch(c.prefill, c.decode, seq);
    seq += int(all.size());
    // The real rows' slots hold NaN before the step, so each must change (to finite values).
    const size_t per_slot = size_t(f.config.n_kv_heads) * size_t(f.config.head_dim);
    for (int l = 0; l < f.config.n_layers; ++l)
      for (const Tensor& t : {f.kv->k_cache(l), f.kv->v_cache(l)})
        for (int32_t slot : fb.out_cache_loc)
          std::fill_n(static_cast<float*>(t.data) + size_t(slot) * per_slot, per_slot, NAN);
    const std::vector<float> before = kv_snapshot(f);
    std::vector<int32_t> ids;
    StepReport r;
    f.runner->forward(fb, ids, &r);
    ASSERT_EQ(r.graph_key, c.key);
    ASSERT_GT(r.n_padding, 0);
    const std::vector<float> after = kv_snapshot(f);
    const std::set<int32_t> changed = changed_slots(f, before, after);
    const std::set<int32_t> real(fb.out_cache_loc.begin(), fb.out_cache_loc.end());
    for (int32_t s : changed)
      EXPECT_TRUE(real.count(s) || s == SlotAllocator::kScratchSlot) << "slot " << s << " written by a padded row";
    for (int32_t s : real) {
      EXPECT_TRUE(changed.count(s)) << "real slot " << s << " not written";
      for (int l = 0; l < f.config.n_layers; ++l)
        EXPECT_TRUE(std::isfinite(static_cast<const float*>(f.kv->k_cache(l).data)[size_t(s) * per_slot]));
    }
  }
}

TEST(GraphRuntime, SmallerBatchAfterALargerOneInTheSameBucketEqualsEager) {
  // No poisoning here: the larger batch's rows stay in the static buffers, as in serving.
  RunnerFixture f(small_graphs());
  auto run_both = [&](const ForwardBatch& large, const ForwardBatch& small, int key) {
    std::vector<int32_t> ids, ids_graph, ids_eager;
    StepReport r;
    f.runner->forward(large, ids, &r);
    ASSERT_EQ(r.graph_key, key);
    f.runner->forward(small, ids_graph, &r);
    ASSERT_EQ(r.graph_key, key);
    const std::vector<float> graph = f.runner->last_logits(small.n_seqs());
    f.runner->forward_eager(small, ids_eager);
    const std::vector<float> eager = f.runner->last_logits(small.n_seqs());
    EXPECT_EQ(ids_graph, ids_eager);
    ASSERT_EQ(graph.size(), eager.size());
    EXPECT_EQ(std::memcmp(graph.data(), eager.data(), graph.size() * sizeof(float)), 0);
  };
  {
    SCOPED_TRACE("extend 16 then 9 (bucket 16)");
    run_both(f.batch({{0, 16}}, {}, 0), f.batch({{0, 9}}, {}, 1), 16);
  }
  {
    SCOPED_TRACE("decode 16 rows then 9 (bucket 16)");
    std::vector<SeqSpec> large, small;
    for (int i = 0; i < 16; ++i) large.push_back({3 + i, 1});
    for (int i = 0; i < 9; ++i) small.push_back({5 + 2 * i, 1});
    f.fill_prefixes(large, 2);
    f.fill_prefixes(small, 20);
    run_both(f.batch({}, large, 2), f.batch({}, small, 20), 16);
  }
}

TEST(GraphRuntime, ManyMixedStepsOnOneKeyReplayTheExtendGraphWithoutCapturing) {
  RunnerFixture f(small_graphs());
  const std::vector<SeqSpec> decode = {{4, 1}, {9, 1}, {2, 1}};
  f.fill_prefixes(decode, 1);
  const GraphStats start = f.runner->graph_stats();
  std::vector<int32_t> ids;
  StepReport r;
  f.runner->forward(f.batch({{0, 13}}, {}, 0), ids, &r);  // an EXTEND of 13 tokens: key 16
  EXPECT_EQ(r.path, StepPath::piecewise_graph);
  EXPECT_EQ(r.graph_key, 16);
  const int n_steps = 25;
  for (int i = 0; i < n_steps; ++i) {
    const int n_prefill = 6 + i % 8;  // 6..13 prefill tokens + 3 decode rows = 9..16 tokens
    f.runner->forward(f.batch({{0, n_prefill}}, decode, 0), ids, &r);
    ASSERT_EQ(r.path, StepPath::piecewise_graph) << "step " << i;
    ASSERT_EQ(r.graph_key, 16) << "step " << i;  // the same key as the EXTEND of 13
  }
  const GraphStats& end = f.runner->graph_stats();
  EXPECT_EQ(end.piecewise_replays_mixed - start.piecewise_replays_mixed, uint64_t(n_steps));
  EXPECT_EQ(end.captured_piecewise_keys, start.captured_piecewise_keys);
  EXPECT_EQ(end.captures_after_seal, 0u);
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
