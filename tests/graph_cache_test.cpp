// GraphCache on its own (keys, bucket lookup, warm-up before capture, seal, unknown keys,
// stats, memory accounting) and the two graph runners' use of their closures, on a
// minimal backend whose only op writes a value into a host buffer: a graph is the list
// of those writes, so what a capture recorded and what a replay ran is observable.
#include <gtest/gtest.h>

#include <functional>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "core/error.h"
#include "graph/decode_graph_runner.h"
#include "graph/graph_cache.h"
#include "graph/piecewise_graph_runner.h"

namespace seam::test {
namespace {

// Records fill() while capturing, runs it otherwise. Every captured graph takes
// kGraphBytes of "device" memory; each capture also grows start-up scratch by
// scratch_per_capture (which graph memory must leave out).
class FillOnlyBackend final : public Backend {
 public:
  static constexpr size_t kGraphBytes = 1 << 20;
  size_t scratch_per_capture = 0;
  int n_synchronize = 0;

  Device device() const override { return Device::cpu; }
  std::string name() const override { return "fill-only"; }
  void* alloc(size_t) override { unused("alloc"); }
  void release(void*) override { unused("release"); }
  size_t free_memory() const override { return (size_t(1) << 40) - taken_ - scratch_; }
  size_t startup_scratch_bytes() const override { return scratch_; }
  void copy_h2d(void*, const void*, size_t) override { unused("copy_h2d"); }
  void copy_d2h(void*, const void*, size_t) override { unused("copy_d2h"); }
  void copy_d2d(void*, const void*, size_t) override { unused("copy_d2d"); }
  void scatter_i32(Tensor, Tensor) override { unused("scatter_i32"); }
  void fill(Tensor t, float value) override {
    auto op = [t, value] {
      for (int64_t i = 0; i < t.numel(); ++i) t.ptr<float>()[i] = value;
    };
    if (capturing_)
      recording_.push_back(op);
    else
      op();
  }
  void synchronize() override { ++n_synchronize; }
  void embedding(Tensor, Tensor, Tensor) override { unused("embedding"); }
  void rms_norm(Tensor, Tensor, Tensor, float) override { unused("rms_norm"); }
  void linear(Tensor, Tensor, Tensor, Tensor) override { unused("linear"); }
  void linear_accumulate(Tensor, Tensor, Tensor, Tensor) override { unused("linear_accumulate"); }
  void rope(Tensor, Tensor, Tensor, const RopeTables&) override { unused("rope"); }
  void silu_mul(Tensor, Tensor) override { unused("silu_mul"); }
  void gated_act(Tensor, Tensor, Activation) override { unused("gated_act"); }
  void scale(Tensor, float) override { unused("scale"); }
  void softcap(Tensor, float) override { unused("softcap"); }
  void rms_norm_add(Tensor, Tensor, Tensor, float) override { unused("rms_norm_add"); }
  void store_kv(Tensor, Tensor, Tensor, Tensor, Tensor, KvScales = {}) override { unused("store_kv"); }
  void attention(Tensor, Tensor, Tensor, Tensor, const AttentionBatch&, const AttentionOptions&) override {
    unused("attention");
  }
  void gather_rows(Tensor, Tensor, Tensor) override { unused("gather_rows"); }
  void apply_penalties(Tensor, const PenaltyBatch&) override { unused("apply_penalties"); }
  void sample(Tensor, Tensor, const SamplingBatch&) override { unused("sample"); }
  void apply_logit_bias(Tensor, const LogitBiasBatch&) override { unused("apply_logit_bias"); }
  void logprobs(Tensor, const LogprobBatch&) override { unused("logprobs"); }
  void apply_token_bitmask(Tensor, Tensor, Tensor) override { unused("apply_token_bitmask"); }
  void begin_capture() override {
    ASSERT_FALSE(capturing_) << "nested capture";
    capturing_ = true;
    recording_.clear();
  }
  std::unique_ptr<Graph> end_capture() override {
    capturing_ = false;
    taken_ += kGraphBytes;
    scratch_ += scratch_per_capture;
    auto g = std::make_unique<Recorded>();
    g->ops = std::move(recording_);
    return g;
  }
  void replay(const Graph& g) override {
    EXPECT_FALSE(capturing_) << "replay while capturing";
    for (const auto& op : static_cast<const Recorded&>(g).ops) op();
  }
  bool capturing() const override { return capturing_; }
  void timer_begin() override {}
  void timer_end() override {}
  double timer_elapsed_ms() const override { return 0; }

 private:
  struct Recorded : Graph {
    std::vector<std::function<void()>> ops;
  };
  [[noreturn]] static void unused(const char* op) { throw Error(std::string("FillOnlyBackend: ") + op); }
  bool capturing_ = false;
  std::vector<std::function<void()>> recording_;
  size_t taken_ = 0, scratch_ = 0;
};

// One host float per slot; fill(slot(i), v) writes cells[i] = v.
struct Cells {
  std::vector<float> cells = std::vector<float>(16, 0.f);
  Tensor slot(int i) { return Tensor(&cells[size_t(i)], DType::f32, Device::cpu, {1}); }
};

TEST(GraphCache, BucketsAreSortedUniqueAndLookupIsTheSmallestCapturedBucketAtLeastN) {
  FillOnlyBackend be;
  Cells c;
  GraphCache cache(be, "test graphs", {8, 1, 4, 4, 2});
  EXPECT_EQ(cache.buckets(), (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(cache.lookup(1), 0) << "nothing captured yet";
  cache.capture_all([&](int key) { cache.capture(key, [&] { be.fill(c.slot(0), float(key)); }); });
  EXPECT_EQ(cache.lookup(1), 1);
  EXPECT_EQ(cache.lookup(3), 4);
  EXPECT_EQ(cache.lookup(4), 4);
  EXPECT_EQ(cache.lookup(5), 8);
  EXPECT_EQ(cache.lookup(8), 8);
  EXPECT_EQ(cache.lookup(9), 0) << "above every bucket";

  // Only key 4 captured: a batch whose smallest bucket is 1 or 8 finds nothing (eager),
  // rather than falling through to another key.
  GraphCache partial(be, "partial graphs", {1, 4, 8});
  ASSERT_TRUE(partial.capture(4, [&] { be.fill(c.slot(0), 4.f); }));
  EXPECT_EQ(partial.lookup(1), 0);
  EXPECT_EQ(partial.lookup(2), 4);
  EXPECT_EQ(partial.lookup(4), 4);
  EXPECT_EQ(partial.lookup(5), 0);
  EXPECT_TRUE(partial.contains(4));
  EXPECT_FALSE(partial.contains(8));
  EXPECT_FALSE(partial.contains(3));
}

TEST(GraphCache, NonPositiveBucketIsAnError) {
  FillOnlyBackend be;
  EXPECT_THROW(GraphCache(be, "bad graphs", {0, 4}), Error);
  EXPECT_THROW(GraphCache(be, "bad graphs", {-2}), Error);
}

TEST(GraphCache, CaptureWarmsUpOutsideCaptureThenRecordsWhatReplayRuns) {
  FillOnlyBackend be;
  Cells c;
  GraphCache cache(be, "test graphs", {4});
  std::vector<bool> capturing_at_call;
  float value = 1.f;
  ASSERT_TRUE(cache.capture(4, [&] {
    capturing_at_call.push_back(be.capturing());
    be.fill(c.slot(0), value);
    value += 1.f;
  }));
  EXPECT_EQ(capturing_at_call, (std::vector<bool>{false, true})) << "a warm-up run, then the captured run";
  EXPECT_EQ(c.cells[0], 1.f) << "the warm-up ran; the captured run was only recorded";
  EXPECT_FALSE(be.capturing());
  c.cells[0] = 0.f;
  cache.replay(4);
  EXPECT_EQ(c.cells[0], 2.f) << "replay runs what the captured run recorded (host values baked)";
  EXPECT_EQ(cache.stats().captured_keys, 1);
  EXPECT_EQ(cache.stats().captures, 1u);
  EXPECT_EQ(cache.stats().replays, 1u);
}

TEST(GraphCache, CaptureAllGoesLargestFirstAndAccountsMemoryAndTime) {
  FillOnlyBackend be;
  be.scratch_per_capture = 3000;  // start-up scratch (GEMM tuning) is not graph memory
  Cells c;
  GraphCache cache(be, "test graphs", {1, 2, 4, 8});
  std::vector<int> order;
  cache.capture_all([&](int key) {
    order.push_back(key);
    for (int part = 0; part < 2; ++part) cache.capture(key, [&] { be.fill(c.slot(part), float(key)); });
  });
  EXPECT_EQ(order, (std::vector<int>{8, 4, 2, 1}));
  const GraphCacheStats& s = cache.stats();
  EXPECT_EQ(s.captured_keys, 4);
  EXPECT_EQ(s.captures, 8u);
  EXPECT_EQ(s.replays, 0u);
  EXPECT_EQ(s.captures_after_seal, 0u);
  EXPECT_EQ(s.graph_bytes, int64_t(8 * FillOnlyBackend::kGraphBytes));
  EXPECT_GE(s.capture_s, 0.0);
  for (int key : {1, 2, 4, 8}) EXPECT_EQ(cache.n_parts(key), 2);
  EXPECT_EQ(cache.n_parts(3), 0);
}

TEST(GraphCache, PartsReplayInOrderWithTheBetweenStepAfterEveryPartButTheLast) {
  FillOnlyBackend be;
  Cells c;
  GraphCache cache(be, "piece graphs", {16});
  const int n_parts = 4;
  for (int part = 0; part < n_parts; ++part)
    ASSERT_TRUE(cache.capture(16, [&] { be.fill(c.slot(part), float(10 + part)); }));
  ASSERT_EQ(cache.n_parts(16), n_parts);
  std::fill(c.cells.begin(), c.cells.end(), 0.f);
  std::vector<int> between_calls;
  cache.replay(16, [&](int i) {
    between_calls.push_back(i);
    for (int p = 0; p < n_parts; ++p)  // parts 0..i ran, the later ones not yet
      EXPECT_EQ(c.cells[size_t(p)], p <= i ? float(10 + p) : 0.f) << "between(" << i << "), part " << p;
  });
  EXPECT_EQ(between_calls, (std::vector<int>{0, 1, 2}));
  for (int p = 0; p < n_parts; ++p) EXPECT_EQ(c.cells[size_t(p)], float(10 + p));
  EXPECT_EQ(cache.stats().replays, 1u) << "one replay of the key, whatever its parts";
}

TEST(GraphCache, SealRefusesCapturesCountsThemAndStillReplays) {
  FillOnlyBackend be;
  Cells c;
  GraphCache cache(be, "test graphs", {2, 4});
  cache.capture_all([&](int key) { cache.capture(key, [&] { be.fill(c.slot(0), float(key)); }); });
  cache.seal();
  EXPECT_TRUE(cache.sealed());
  const GraphCacheStats before = cache.stats();
  bool ran = false;
  EXPECT_FALSE(cache.capture(4, [&] { ran = true; }));
  EXPECT_FALSE(ran) << "a refused capture runs nothing";
  EXPECT_EQ(cache.stats().captures_after_seal, 1u);
  bool called = false;
  cache.capture_all([&](int) { called = true; });
  EXPECT_FALSE(called);
  EXPECT_EQ(cache.stats().captures_after_seal, 3u) << "one more per bucket";
  EXPECT_EQ(cache.stats().captures, before.captures);
  EXPECT_EQ(cache.stats().captured_keys, before.captured_keys);
  EXPECT_EQ(cache.n_parts(4), 1) << "no part was added";
  c.cells[0] = 0.f;
  cache.replay(cache.lookup(3));
  EXPECT_EQ(c.cells[0], 4.f);
}

TEST(GraphCache, ReplayOfAnUnknownOrUncapturedKeyIsAnErrorNotACapture) {
  FillOnlyBackend be;
  Cells c;
  GraphCache cache(be, "test graphs", {1, 2, 4});
  ASSERT_TRUE(cache.capture(2, [&] { be.fill(c.slot(0), 2.f); }));
  EXPECT_THROW(cache.replay(3), Error) << "not a bucket";
  EXPECT_THROW(cache.replay(4), Error) << "a bucket without graphs";
  EXPECT_THROW(cache.replay(0), Error);
  EXPECT_THROW(cache.capture(3, [&] { be.fill(c.slot(0), 3.f); }), Error) << "capture only under a bucket";
  EXPECT_FALSE(be.capturing());
  EXPECT_EQ(cache.stats().replays, 0u);
  EXPECT_EQ(cache.stats().captures, 1u);
  EXPECT_EQ(cache.stats().captured_keys, 1);
  cache.replay(2);
  cache.replay(2);
  EXPECT_EQ(cache.stats().replays, 2u);
}

TEST(DecodeGraphRunnerWork, PadsEachBucketThenCapturesTheWholeStepAsOneGraph) {
  FillOnlyBackend be;
  Cells c;
  std::vector<std::pair<int, int>> pads;
  DecodeGraphWork work;
  work.pad = [&](int n_tokens, int n_seqs) { pads.emplace_back(n_tokens, n_seqs); };
  work.forward = [&](int bs) {
    be.fill(c.slot(0), float(bs));
    be.fill(c.slot(1), float(bs) + 0.5f);
  };
  DecodeGraphRunner runner(be, {1, 4, 2}, work);
  runner.capture_all();
  runner.seal();
  EXPECT_EQ(pads, (std::vector<std::pair<int, int>>{{4, 4}, {2, 2}, {1, 1}}));
  EXPECT_EQ(runner.stats().captured_keys, 3);
  EXPECT_EQ(runner.stats().captures, 3u);
  EXPECT_EQ(runner.bucket_for(3), 4);
  EXPECT_EQ(runner.bucket_for(5), 0);
  c.cells[0] = c.cells[1] = 0.f;
  runner.replay(runner.bucket_for(2));
  EXPECT_EQ(c.cells[0], 2.f);
  EXPECT_EQ(c.cells[1], 2.5f);
  EXPECT_EQ(runner.stats().captures_after_seal, 0u);
}

TEST(PiecewiseGraphRunnerWork, OneGraphPerPieceAndAttentionOnTheRealTokensBetween) {
  FillOnlyBackend be;
  Cells c;
  const int n_pieces = 3;
  std::vector<std::pair<int, int>> pads;
  std::vector<std::pair<int, int>> attention_calls;  // (layer, attn.n_tokens)
  PiecewiseGraphWork work;
  work.n_pieces = n_pieces;
  work.pad = [&](int n_tokens, int n_seqs) { pads.emplace_back(n_tokens, n_seqs); };
  work.run_piece = [&](int piece, int n_tokens) { be.fill(c.slot(piece), float(100 * n_tokens + piece)); };
  work.run_attention = [&](int layer, const AttentionBatch& attn) {
    EXPECT_FALSE(be.capturing()) << "attention runs eagerly, never captured";
    EXPECT_EQ(c.cells[size_t(layer)], float(100 * 8 + layer)) << "piece " << layer << " ran before attention "
                                                             << layer;
    EXPECT_EQ(c.cells[size_t(layer) + 1], 0.f) << "piece " << layer + 1 << " runs after attention " << layer;
    attention_calls.emplace_back(layer, attn.n_tokens);
  };
  PiecewiseGraphRunner runner(be, {4, 8}, work);
  runner.capture_all();
  runner.seal();
  EXPECT_EQ(pads, (std::vector<std::pair<int, int>>{{8, 0}, {4, 0}})) << "token padding only, largest first";
  EXPECT_TRUE(attention_calls.empty()) << "capture records pieces only";
  EXPECT_EQ(runner.stats().captures, uint64_t(2 * n_pieces));
  std::fill(c.cells.begin(), c.cells.end(), 0.f);
  AttentionBatch attn;
  attn.n_tokens = 6;  // 6 real tokens in bucket 8
  ASSERT_EQ(runner.bucket_for(6), 8);
  runner.replay(8, attn);
  EXPECT_EQ(attention_calls, (std::vector<std::pair<int, int>>{{0, 6}, {1, 6}}));
  for (int p = 0; p < n_pieces; ++p) EXPECT_EQ(c.cells[size_t(p)], float(800 + p));
  AttentionBatch too_many;
  too_many.n_tokens = 9;
  EXPECT_THROW(runner.replay(8, too_many), Error) << "attention may not cover more rows than the bucket";
}

}  // namespace
}  // namespace seam::test
