// Admission against the KV pool, without a model. The invariant admission keeps with
// EngineCore::validate: a request whose worst case -- n_prompt + min(max_new_tokens,
// max_context + 1 - n_prompt) - 1 KV slots, the last sampled token never fed back -- fits
// the pool is admitted into an empty pool and runs to its end without an idle schedule.
// And the scheduler's side of the engine loop's wait: a schedule that can admit nothing
// (the head does not fit what another holds) is idle and changes nothing, however often
// it is repeated, until the holder lets go -- so the loop may sleep until a submit or an
// abort instead of scheduling again.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "scheduler/scheduler.h"
#include "tokenizer/incremental_detokenizer.h"  // (Request owns one: its destructor needs the type)

namespace seam {
namespace {

// What EngineCore::validate counts for a request alone (engine_core.cpp).
int worst_case_kv(int n_prompt, int max_new_tokens, int max_context) {
  return n_prompt + std::min(max_new_tokens, max_context + 1 - n_prompt) - 1;
}

struct Pool {
  Pool(int n_tokens, SchedulerConfig cfg) : slots(n_tokens + 1), radix(slots, true) {  // + the scratch slot
    sched = std::make_unique<Scheduler>(cfg, slots, radix);
  }
  Request* add(int n_prompt, int max_new_tokens) {
    auto r = std::make_unique<Request>();
    r->id = reqs.size();
    for (int i = 0; i < n_prompt; ++i) r->prompt_ids.push_back(int32_t(i % 31));
    r->params.max_new_tokens = max_new_tokens;
    sched->add(r.get());
    reqs.push_back(std::move(r));
    return reqs.back().get();
  }
  // Commits a batch as the engine does: every sampling row gets a token, and a request
  // ends on max_new_tokens or past max_context (speculative_commit.cpp, take_token).
  void commit(const ForwardBatch& fb) {
    for (int s = 0; s < fb.n_seqs(); ++s) {
      Request* r = reqs[fb.request_ids[size_t(s)]].get();
      r->commit_step(fb.qo_indptr[size_t(s) + 1] - fb.qo_indptr[size_t(s)], fb.samples[size_t(s)] != 0);
      if (!fb.samples[size_t(s)]) continue;
      r->output_ids.push_back(7);
      if (int(r->output_ids.size()) >= r->params.max_new_tokens || r->n_total() > sched->config().max_context) {
        r->finish = FinishReason::length;
        sched->finish(r);
      }
    }
  }
  SlotAllocator slots;
  RadixCache radix;
  std::unique_ptr<Scheduler> sched;
  std::vector<std::unique_ptr<Request>> reqs;
};

TEST(SchedulerAdmission, EveryRequestValidateAcceptsRunsAloneInAnEmptyPool) {
  constexpr int n_pool = 16;
  int n_checked = 0, n_whole_pool_one_token = 0;
  for (int max_context : {8, 17, 64})
    for (int chunk : {4, 64})
      for (int n_prompt = 1; n_prompt < max_context && n_prompt <= n_pool; ++n_prompt)
        for (int max_new : {1, 2, 3, 5, 40}) {
          if (worst_case_kv(n_prompt, max_new, max_context) > n_pool) continue;  // validate refuses it
          Pool pool(n_pool, SchedulerConfig{chunk, 4, false, max_context});
          Request* r = pool.add(n_prompt, max_new);
          for (int step = 0; step < 200 && pool.sched->has_work(); ++step) {
            const ForwardBatch fb = pool.sched->schedule();
            ASSERT_NE(fb.mode, ForwardMode::idle) << "prompt " << n_prompt << ", max_new_tokens " << max_new
                                                  << ", context " << max_context << ": stuck at step " << step;
            pool.commit(fb);
          }
          ASSERT_FALSE(pool.sched->has_work());
          EXPECT_EQ(r->finish, FinishReason::length);
          EXPECT_EQ(int(r->output_ids.size()), std::min(max_new, max_context + 1 - n_prompt));
          ++n_checked;
          n_whole_pool_one_token += n_prompt == n_pool && max_new == 1;
        }
  EXPECT_GT(n_checked, 100);
  EXPECT_EQ(n_whole_pool_one_token, 4);  // the boundary, under two contexts and two chunk sizes
}

TEST(SchedulerAdmission, WholePoolPromptWithOneTokenNeedsNoDecodeSlot) {
  constexpr int n_pool = 16;
  Pool pool(n_pool, SchedulerConfig{64, 4, false, 64});
  Request* r = pool.add(n_pool, 1);
  const ForwardBatch fb = pool.sched->schedule();
  ASSERT_EQ(fb.mode, ForwardMode::extend);
  ASSERT_EQ(fb.n_seqs(), 1);
  EXPECT_EQ(fb.n_tokens(), n_pool);
  EXPECT_EQ(fb.samples[0], 1);  // the one output token comes from the prefill's logits
  EXPECT_EQ(pool.slots.n_free(), 0);
  pool.commit(fb);
  EXPECT_TRUE(r->finished());
  EXPECT_FALSE(pool.sched->has_work());
}

TEST(SchedulerAdmission, AHeadThatCannotFitWhatAnotherHoldsIsAnIdleScheduleThatChangesNothing) {
  constexpr int n_pool = 64;
  Pool pool(n_pool, SchedulerConfig{64, 4, false, 512});
  // Another holder of the pool (as far as admission can tell: slots neither free nor evictable).
  std::vector<int32_t> held;
  ASSERT_TRUE(pool.slots.alloc(10, held));
  Request* head = pool.add(60, 1);
  Request* behind = pool.add(4, 3);  // would fit, but the queue is first come, first served
  for (int i = 0; i < 3; ++i) {
    const ForwardBatch fb = pool.sched->schedule();
    EXPECT_EQ(fb.mode, ForwardMode::idle);
    EXPECT_EQ(fb.n_seqs(), 0);
    EXPECT_TRUE(fb.page_table_writes.empty());
    EXPECT_EQ(pool.sched->n_waiting(), 2u);
    EXPECT_EQ(pool.sched->n_running(), 0u);
    EXPECT_EQ(pool.sched->waiting().front(), head);
    EXPECT_EQ(pool.slots.n_free(), n_pool - 10);
    EXPECT_EQ(head->req_row, -1);
    EXPECT_TRUE(head->slots.empty());
    EXPECT_EQ(pool.sched->stats().retractions, 0u);
    EXPECT_EQ(pool.sched->stats().steps_extend + pool.sched->stats().steps_decode, 0u);
  }
  // The holder lets go: the head is admitted, and the request behind it after.
  pool.slots.free(held.data(), held.size());
  for (int step = 0; step < 20 && pool.sched->has_work(); ++step) {
    const ForwardBatch fb = pool.sched->schedule();
    ASSERT_NE(fb.mode, ForwardMode::idle) << "step " << step;
    pool.commit(fb);
  }
  EXPECT_TRUE(head->finished());
  EXPECT_TRUE(behind->finished());
  EXPECT_EQ(behind->output_ids.size(), 3u);
}

}  // namespace
}  // namespace seam
