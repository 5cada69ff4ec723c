// The one-way step's page-table writes: they travel in the ForwardBatch, ride in
// the step's one input copy, and land in the page table before the step's
// attention reads it -- eager, under the piecewise graphs and under the decode
// graphs -- also when a step has more writes than the pair buffer holds (the
// excess is copied directly). The StepResult names each row's request.
#include <gtest/gtest.h>

#include <vector>

#include "runner_fixture.h"

namespace seam::test {
namespace {

GraphConfig eager_only() {
  GraphConfig g;
  g.disable_cuda_graph = true;
  return g;
}

GraphConfig with_graphs() {
  GraphConfig g;
  g.decode_buckets = {1, 2, 4};
  g.piecewise_buckets = {8, 16};
  return g;
}

// The fixture's slots of sequence `seq`, positions [0, n).
std::vector<int32_t> fixture_slots(int seq, int n) {
  std::vector<int32_t> s(static_cast<size_t>(n));
  for (int p = 0; p < n; ++p) s[size_t(p)] = 1 + seq * 512 + p;
  return s;
}

void wipe_row(RunnerFixture& f, int row) {
  const std::vector<int32_t> scratch(512, 0);
  f.kv->set_slots(row, 0, scratch.data(), 512);
}

std::vector<int32_t> page_table_row(RunnerFixture& f, int row, int n) {
  const int32_t* table = f.kv->page_table().ptr<int32_t>() + size_t(row) * 512;  // cpu: host memory
  return std::vector<int32_t>(table, table + n);
}

std::vector<float> run_logits(RunnerFixture& f, const ForwardBatch& fb, StepResult* result = nullptr) {
  StepResult r = f.runner->forward(fb);
  if (result) *result = r;
  return f.runner->last_logits(fb.n_seqs());
}

ForwardBatch with_rows(ForwardBatch fb, uint64_t request_id) {
  fb.request_ids.assign(size_t(fb.n_seqs()), request_id);
  fb.samples.assign(size_t(fb.n_seqs()), 1);
  return fb;
}

TEST(PageTableWrites, LandBeforeTheStepsAttentionOnEveryPath) {
  for (bool graphs : {false, true}) {
    SCOPED_TRACE(graphs ? "graphs" : "eager");
    RunnerFixture f(graphs ? with_graphs() : eager_only(), 16, 4);
    // The reference: the page table written up front (by the fixture).
    const ForwardBatch prefill = with_rows(f.batch({{0, 12}}, {}), 7);
    const ForwardBatch decode = with_rows(f.batch({}, {{12, 1}}), 7);
    const std::vector<float> ref_prefill = run_logits(f, prefill);
    const std::vector<float> ref_decode = run_logits(f, decode);

    // The same steps with the row wiped and its entries carried by the batches:
    // had they landed after attention, attention would read the scratch slot.
    wipe_row(f, 0);
    ForwardBatch p = prefill;
    const std::vector<int32_t> slots = fixture_slots(0, 13);
    p.add_page_table_write(0, 0, slots.data(), 12);
    StepResult r;
    EXPECT_EQ(run_logits(f, p, &r), ref_prefill);
    ASSERT_EQ(r.seqs.size(), 1u);
    EXPECT_EQ(r.seqs[0].request_id, 7u);
    EXPECT_EQ(r.seqs[0].n_new, 12);
    EXPECT_TRUE(r.seqs[0].sample);

    wipe_row(f, 0);
    ForwardBatch d = decode;
    d.add_page_table_write(0, 0, slots.data(), 13);
    EXPECT_EQ(run_logits(f, d, &r), ref_decode);
    EXPECT_EQ(r.seqs[0].n_new, 1);
    EXPECT_EQ(page_table_row(f, 0, 13), slots);
    if (graphs) {
      EXPECT_EQ(f.runner->graph_stats().decode_graph_replays, 2u);
      EXPECT_EQ(f.runner->graph_stats().piecewise_replays, 2u);
    }
  }
}

TEST(PageTableWrites, MoreWritesThanThePairBufferAreCopiedDirectly) {
  RunnerFixture f(with_graphs(), 16, 4);
  const int capacity = f.runner->buffers().max_page_table_writes();
  ASSERT_EQ(capacity, 32);  // twice the 16 token rows
  const ForwardBatch prefill = with_rows(f.batch({{0, 12}}, {}), 1);
  const ForwardBatch decode = with_rows(f.batch({}, {{12, 1}}), 1);
  run_logits(f, prefill);
  const std::vector<float> ref_decode = run_logits(f, decode);

  // Row 1 (a prefix-cache hit of 40 entries) first, then row 0's 13: the pairs cover
  // row 1's first 32 entries; the rest of row 1 and all of row 0 go directly.
  wipe_row(f, 0);
  wipe_row(f, 1);
  ForwardBatch d = decode;
  const std::vector<int32_t> row1 = fixture_slots(1, 40), row0 = fixture_slots(0, 13);
  d.add_page_table_write(1, 0, row1.data(), 40);
  d.add_page_table_write(0, 0, row0.data(), 13);
  ASSERT_GT(int(d.page_table_slots.size()), capacity);
  EXPECT_EQ(run_logits(f, d), ref_decode);
  EXPECT_EQ(page_table_row(f, 1, 40), row1);
  EXPECT_EQ(page_table_row(f, 0, 13), row0);
  EXPECT_EQ(page_table_row(f, 1, 41).back(), 0) << "past the write, the row stays as it was";
}

TEST(PageTableWrites, ScatterWritesEachPairAndNothingElse) {
  CpuBackend backend;
  std::vector<int32_t> dst(12, -1);
  const std::vector<int32_t> pairs = {3, 30, 0, 7, 11, 110};
  backend.scatter_i32(Tensor(dst.data(), DType::i32, Device::cpu, {3, 4}),
                      Tensor(const_cast<int32_t*>(pairs.data()), DType::i32, Device::cpu, {3, 2}));
  EXPECT_EQ(dst, (std::vector<int32_t>{7, -1, -1, 30, -1, -1, -1, -1, -1, -1, -1, 110}));
}

}  // namespace
}  // namespace seam::test
