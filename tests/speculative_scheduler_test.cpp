// The scheduler's verify rows without a model: a decoding request with d drafts becomes
// d + 1 consecutive one-token rows (draft_index 0 .. d) at positions n_kv .. n_kv + d with
// growing KV lengths and their own slots; the rejected drafts' slots return at once; drafts
// are dropped before anyone is retracted when KV is short.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "scheduler/scheduler.h"
#include "tokenizer/incremental_detokenizer.h"

namespace seam {
namespace {

struct Fixture {
  Fixture(int n_slots, bool mixed = false) : slots(n_slots), radix(slots, false) {
    SchedulerConfig cfg;
    cfg.chunked_prefill_size = 64;
    cfg.max_running_requests = 4;
    cfg.enable_mixed_chunk = mixed;
    cfg.max_context = 128;
    sched = std::make_unique<Scheduler>(cfg, slots, radix);
  }
  Request* add(int n_prompt) {
    auto r = std::make_unique<Request>();
    r->id = reqs.size();
    for (int i = 0; i < n_prompt; ++i) r->prompt_ids.push_back(10 + i);
    r->params.max_new_tokens = 100;
    sched->add(r.get());
    reqs.push_back(std::move(r));
    return reqs.back().get();
  }
  // Prefills everything waiting (in chunks) and samples one token each (token 50).
  void prefill() {
    while (sched->n_waiting() > 0 || std::any_of(reqs.begin(), reqs.end(), [](auto& r) { return !r->decoding; })) {
      ForwardBatch fb = sched->schedule();
      ASSERT_EQ(fb.mode, ForwardMode::extend);
      for (int s = 0; s < fb.n_seqs(); ++s) {
        Request& r = *reqs[fb.request_ids[size_t(s)]];
        r.commit_step(fb.qo_indptr[size_t(s) + 1] - fb.qo_indptr[size_t(s)], fb.samples[size_t(s)] != 0);
        if (fb.samples[size_t(s)]) r.output_ids.push_back(50);
      }
    }
  }
  SlotAllocator slots;
  RadixCache radix;
  std::unique_ptr<Scheduler> sched;
  std::vector<std::unique_ptr<Request>> reqs;
};

TEST(SpeculativeScheduler, VerifyRowIsOneTokenSubRowsOverItsOwnKv) {
  Fixture f(200);
  Request* a = f.add(5);
  Request* b = f.add(3);
  f.prefill();
  a->draft_ids = {7, 8, 9};
  const int free_before = f.slots.n_free();
  ForwardBatch fb = f.sched->schedule();
  ASSERT_EQ(fb.mode, ForwardMode::decode);
  ASSERT_EQ(fb.n_seqs(), 5);  // a: 1 + 3 sub-rows, b: 1 plain row
  EXPECT_EQ(fb.draft_index, (std::vector<int32_t>{0, 1, 2, 3, -1}));
  EXPECT_EQ(fb.input_ids, (std::vector<int32_t>{50, 7, 8, 9, 50}));
  EXPECT_EQ(fb.positions, (std::vector<int32_t>{5, 6, 7, 8, 3}));
  EXPECT_EQ(fb.seq_lens, (std::vector<int32_t>{6, 7, 8, 9, 4}));
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(fb.req_rows[size_t(s)], a->req_row);
    EXPECT_EQ(fb.out_cache_loc[size_t(s)], a->slots[size_t(5 + s)]);
    EXPECT_EQ(fb.sampling[size_t(s)].step, 1 + s);  // the output index each sub-row samples
  }
  EXPECT_EQ(f.slots.n_free(), free_before - 5);
  EXPECT_EQ(f.sched->stats().verify_rows, 1u);
  // One draft accepted: KV keeps the pending token and draft 1; two slots go back at once.
  a->output_ids.insert(a->output_ids.end(), {7, 60});
  a->commit_step(2, true);
  f.sched->free_unused_slots(a);
  EXPECT_EQ(int(a->slots.size()), a->n_kv);
  EXPECT_EQ(a->n_kv, 7);
  EXPECT_EQ(a->n_pending(), 1);
  b->output_ids.push_back(61);
  b->commit_step(1, true);
  EXPECT_EQ(f.slots.n_free(), free_before - 3);
  // The next step feeds a's newest token at the position after the kept draft.
  a->draft_ids.clear();
  fb = f.sched->schedule();
  EXPECT_EQ(fb.positions, (std::vector<int32_t>{7, 4}));
  EXPECT_EQ(fb.input_ids, (std::vector<int32_t>{60, 61}));
  EXPECT_TRUE(fb.draft_index.empty());  // no verify row: plain decode, no extra per-row data
}

TEST(SpeculativeScheduler, DraftsAreClampedToThePageTable) {
  Fixture f(400);
  Request* a = f.add(125);  // max_context 128: positions 125, 126, 127 remain
  f.prefill();
  a->draft_ids = {1, 2, 3, 4, 5};
  ForwardBatch fb = f.sched->schedule();
  EXPECT_EQ(fb.n_seqs(), 3);
  EXPECT_EQ(fb.positions.back(), 127);
}

TEST(SpeculativeScheduler, DraftsGoBeforeRequestsWhenKvIsShort) {
  Fixture f(1 + 8 + 2);  // two 4-token prompts, then room for two more tokens
  Request* a = f.add(4);
  Request* b = f.add(4);
  f.prefill();
  a->draft_ids = {1, 2, 3};
  b->draft_ids = {1, 2};
  ForwardBatch fb = f.sched->schedule();
  EXPECT_EQ(fb.n_seqs(), 2);  // both still decode, without drafts
  EXPECT_TRUE(fb.draft_index.empty());
  EXPECT_EQ(f.sched->stats().retractions, 0u);
  EXPECT_EQ(f.sched->stats().drafts_dropped_for_kv, 1u);
}

TEST(SpeculativeScheduler, MixedBudgetCountsVerifyTokens) {
  Fixture f(400, /*mixed=*/true);
  Request* a = f.add(4);
  f.prefill();
  a->draft_ids = {1, 2, 3};
  f.add(100);  // prefills in chunks beside a's verify row
  ForwardBatch fb = f.sched->schedule();
  ASSERT_EQ(fb.mode, ForwardMode::mixed);
  EXPECT_EQ(fb.n_tokens(), 64);             // the chunk budget, verify tokens included
  EXPECT_EQ(fb.n_prefill_tokens(), 64 - 4);
  EXPECT_EQ(fb.draft_index, (std::vector<int32_t>{-1, 0, 1, 2, 3}));
}

}  // namespace
}  // namespace seam
