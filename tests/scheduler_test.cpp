// Scheduler invariants without a model: budgets, MIXED row order, retraction
// that loses nothing, and every KV slot back in the pool at the end.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>

#include "scheduler/scheduler.h"
#include "tokenizer/incremental_detokenizer.h"

namespace seam {
namespace {

struct Sim {
  Sim(SchedulerConfig cfg, int n_slots, bool cache) : slots(n_slots), radix(slots, cache) {
    sched = std::make_unique<Scheduler>(cfg, slots, radix);
  }
  // The step as the engine commits it: from the batch's rows alone (the "model"
  // samples every row; rows whose sample counts get the token from `next`).
  template <typename Next>
  void commit(const ForwardBatch& fb, Next next) {
    // The page table as the device would hold it after this step's writes.
    for (const PageTableWrite& w : fb.page_table_writes) {
      ASSERT_GE(w.row, 0);
      ASSERT_LT(w.row, sched->config().max_running_requests);
      ASSERT_LE(w.begin + w.n, sched->config().max_context);
      ASSERT_LE(size_t(w.offset + w.n), fb.page_table_slots.size());
      std::vector<int32_t>& row = table[w.row];
      row.resize(size_t(sched->config().max_context), -1);
      for (int j = 0; j < w.n; ++j) row[size_t(w.begin + j)] = fb.page_table_slots[size_t(w.offset + j)];
    }
    ASSERT_EQ(int(fb.request_ids.size()), fb.n_seqs());
    ASSERT_EQ(int(fb.samples.size()), fb.n_seqs());
    // What attention reads: every position of every row up to its length maps to
    // the request's own slot (no stale entry of an earlier owner of the row).
    for (int s = 0; s < fb.n_seqs(); ++s) {
      const Request& r = *reqs[fb.request_ids[size_t(s)]];
      ASSERT_EQ(fb.req_rows[size_t(s)], r.req_row);
      const std::vector<int32_t>& row = table[r.req_row];
      for (int p = 0; p < fb.seq_lens[size_t(s)]; ++p)
        ASSERT_EQ(row.at(size_t(p)), r.slots[size_t(p)]) << "row " << r.req_row << " position " << p;
    }
    for (int s = 0; s < fb.n_seqs(); ++s)
      reqs[fb.request_ids[size_t(s)]]->commit_step(fb.qo_indptr[size_t(s) + 1] - fb.qo_indptr[size_t(s)],
                                                   fb.samples[size_t(s)] != 0);
    for (int s = 0; s < fb.n_seqs(); ++s)
      if (fb.samples[size_t(s)]) next(reqs[fb.request_ids[size_t(s)]].get());
  }
  Request* add(int prompt_len, int max_new, int32_t salt) {
    auto r = std::make_unique<Request>();
    r->id = reqs.size();
    for (int i = 0; i < prompt_len; ++i) r->prompt_ids.push_back((salt * 7 + i) % 97);
    r->params.max_new_tokens = max_new;
    sched->add(r.get());
    reqs.push_back(std::move(r));
    return reqs.back().get();
  }
  // Runs to completion, checking invariants every step; returns steps by mode.
  void run(int max_steps = 100000) {
    const auto& cfg = sched->config();
    for (int step = 0; step < max_steps && sched->has_work(); ++step) {
      ForwardBatch fb = sched->schedule();
      ASSERT_NE(fb.mode, ForwardMode::idle) << "no progress at step " << step;
      ASSERT_EQ(int(fb.request_ids.size()), fb.n_seqs());
      if (fb.mode != ForwardMode::decode) EXPECT_LE(fb.n_tokens(), cfg.chunked_prefill_size);
      EXPECT_LE(int(sched->n_running()), cfg.max_running_requests);
      // Prefill rows first, then decode rows of exactly one token.
      for (int s = 0; s < fb.n_seqs(); ++s) {
        const int n = fb.qo_indptr[size_t(s) + 1] - fb.qo_indptr[size_t(s)];
        if (s >= fb.n_prefill_seqs) {
          EXPECT_EQ(n, 1);
          EXPECT_TRUE(reqs[fb.request_ids[size_t(s)]]->decoding);
        } else {
          EXPECT_FALSE(reqs[fb.request_ids[size_t(s)]]->decoding);
        }
      }
      if (fb.mode == ForwardMode::mixed) {
        EXPECT_GT(fb.n_prefill_seqs, 0);
        EXPECT_LT(fb.n_prefill_seqs, fb.n_seqs());
      }
      modes[int(fb.mode)]++;
      // Slots handed out are distinct and not the scratch slot.
      for (int32_t loc : fb.out_cache_loc) EXPECT_GT(loc, 0);
      commit(fb, [&](Request* r) {
        // A deterministic "model": the next token depends on the whole sequence length.
        r->output_ids.push_back(int32_t(r->n_total() % 97));
        if (int(r->output_ids.size()) >= r->params.max_new_tokens) {
          r->finish = FinishReason::length;
          sched->finish(r);
        }
      });
    }
    EXPECT_FALSE(sched->has_work());
  }
  SlotAllocator slots;
  RadixCache radix;
  std::unique_ptr<Scheduler> sched;
  std::vector<std::unique_ptr<Request>> reqs;
  std::map<int, std::vector<int32_t>> table;  // page-table row -> entries (-1: never written)
  int modes[4] = {0, 0, 0, 0};
};

TEST(Scheduler, BudgetsAndOrderWithMixedChunks) {
  for (int chunk : {1, 5, 16, 64}) {
    SchedulerConfig cfg{chunk, 8, true, 512};
    Sim sim(cfg, 4096, false);
    for (int i = 0; i < 20; ++i) sim.add(3 + (i * 13) % 70, 5 + i % 9, i);
    sim.run();
    for (auto& r : sim.reqs) EXPECT_EQ(int(r->output_ids.size()), r->params.max_new_tokens);
    EXPECT_EQ(sim.slots.n_free(), sim.slots.capacity()) << "chunk " << chunk;
    EXPECT_EQ(sim.sched->stats().budget_violations, 0u);
    if (chunk >= 16) EXPECT_GT(sim.modes[int(ForwardMode::mixed)], 0);
  }
}

TEST(Scheduler, WithoutMixedChunkNoMixedSteps) {
  SchedulerConfig cfg{32, 8, false, 512};
  Sim sim(cfg, 4096, false);
  for (int i = 0; i < 10; ++i) sim.add(10 + i, 6, i);
  sim.run();
  EXPECT_EQ(sim.modes[int(ForwardMode::mixed)], 0);
  EXPECT_GT(sim.modes[int(ForwardMode::decode)], 0);
  EXPECT_GT(sim.modes[int(ForwardMode::extend)], 0);
}

TEST(Scheduler, RetractionKeepsTokensAndFreesEverything) {
  SchedulerConfig cfg{64, 16, true, 512};
  Sim sim(cfg, 200, false);  // far too small for 12 requests of ~60 tokens each
  for (int i = 0; i < 12; ++i) sim.add(20 + i, 40, i);
  sim.run();
  EXPECT_GT(sim.sched->stats().retractions, 0u);
  for (auto& r : sim.reqs) {
    ASSERT_EQ(int(r->output_ids.size()), 40);
    // The fake model's token at step k is a function of the length: a retracted
    // request that lost or duplicated a token would break this sequence.
    for (size_t k = 0; k < r->output_ids.size(); ++k)
      EXPECT_EQ(r->output_ids[k], int32_t((r->prompt_ids.size() + k) % 97));
  }
  EXPECT_EQ(sim.slots.n_free(), sim.slots.capacity());
}

TEST(Scheduler, PrefixCacheSharesAndEvicts) {
  SchedulerConfig cfg{64, 4, false, 512};
  Sim sim(cfg, 300, true);
  for (int i = 0; i < 10; ++i) sim.add(50, 10, 1);  // identical prompts
  sim.run();
  EXPECT_GT(sim.sched->stats().prefix_cache_hit_tokens, 0u);
  EXPECT_EQ(sim.slots.n_free() + sim.radix.n_cached_tokens(), sim.slots.capacity());
  sim.radix.evict(1 << 20);
  EXPECT_EQ(sim.slots.n_free(), sim.slots.capacity());
}

TEST(Scheduler, AbortAnywhereFreesPages) {
  SchedulerConfig cfg{8, 4, true, 512};
  Sim sim(cfg, 1000, true);
  for (int i = 0; i < 8; ++i) sim.add(20, 30, i);
  for (int step = 0; step < 6; ++step) {
    sim.commit(sim.sched->schedule(), [](Request* r) { r->output_ids.push_back(5); });
  }
  // Abort everything: running (mid-prefill and decoding) and waiting.
  for (auto& r : sim.reqs) EXPECT_TRUE(sim.sched->abort(r.get()));
  EXPECT_FALSE(sim.sched->has_work());
  sim.radix.evict(1 << 20);
  EXPECT_EQ(sim.slots.n_free(), sim.slots.capacity());
  EXPECT_FALSE(sim.sched->abort(sim.reqs[0].get()));
}

TEST(RadixCache, MatchSplitInsertEvict) {
  SlotAllocator slots(100);
  RadixCache cache(slots, true);
  std::vector<int32_t> a = {1, 2, 3, 4, 5}, b = {1, 2, 3, 9};
  std::vector<int32_t> sa, sb;
  ASSERT_TRUE(slots.alloc(5, sa));
  cache.insert(a.data(), 5, sa.data());
  std::vector<int32_t> got;
  RadixNode* node = nullptr;
  EXPECT_EQ(cache.match_prefix(b.data(), 4, got, &node), 3);
  EXPECT_EQ(got, std::vector<int32_t>(sa.begin(), sa.begin() + 3));
  cache.lock(node);
  EXPECT_EQ(cache.evict(100), 2);  // only the unlocked tail {4, 5}
  cache.unlock(node);
  EXPECT_EQ(cache.evict(100), 3);
  EXPECT_EQ(slots.n_free(), slots.capacity());
}

// A request locks the end of its cached prefix; another request's match then splits that node.
// After the first unlocks, what the cache counts as evictable must be exactly what evict() can
// free (the scheduler admits on the count and allocates through evict): a split that left a
// copied lock on the lower part made the upper part "evictable" above a locked child, and the
// scheduler admitted, failed to allocate and retried forever.
TEST(RadixCache, ALockedNodeSplitByAnotherMatchUnlocksWhole) {
  SlotAllocator slots(100);
  RadixCache cache(slots, true);
  std::vector<int32_t> a = {1, 2, 3, 4, 5}, b = {1, 2, 9};
  std::vector<int32_t> sa;
  ASSERT_TRUE(slots.alloc(5, sa));
  cache.insert(a.data(), 5, sa.data());
  std::vector<int32_t> got_a, got_b;
  RadixNode* node_a = nullptr;
  RadixNode* node_b = nullptr;
  ASSERT_EQ(cache.match_prefix(a.data(), 5, got_a, &node_a), 5);
  cache.lock(node_a);                                              // holds {1..5}
  ASSERT_EQ(cache.match_prefix(b.data(), 3, got_b, &node_b), 2);  // splits {1..5} at 2
  EXPECT_EQ(cache.n_evictable_tokens(), 0);
  cache.lock(node_b);
  cache.unlock(node_a);
  EXPECT_EQ(cache.n_evictable_tokens(), 3);                        // {3, 4, 5}
  EXPECT_EQ(cache.evict(100), 3);
  cache.unlock(node_b);
  EXPECT_EQ(cache.n_evictable_tokens(), 2);
  EXPECT_EQ(cache.evict(100), 2);
  EXPECT_EQ(cache.n_evictable_tokens(), 0);
  EXPECT_EQ(slots.n_free(), slots.capacity());
}

}  // namespace
}  // namespace seam
