// Scheduler: the waiting queue and the running set; each step it builds one
// batch under the token budget (chunked_prefill_size), the running-request
// cap and the KV budget: EXTEND (prefill chunks), DECODE, or with mixed chunk
// on, MIXED (prefill rows first, then one row per decoding request, the total
// never above the budget). When KV runs out it retracts the newest requests
// back to the waiting queue; generated tokens are kept, so nothing is lost.
// Pure CPU: owns no device state and calls no device code. The page-table
// entries its allocations need travel in the ForwardBatch (page_table_writes);
// the runner applies them. The engine commits a step from the runner's
// StepResult (Request::commit_step) and tells the scheduler only what it
// cannot know: a request finished (finish) or was aborted (abort).
//
// Speculative decoding: a decoding request with d draft tokens (Request::draft_ids, set by
// the engine before schedule()) becomes a *verify row* of d + 1 tokens -- its pending token
// and the drafts -- at positions n_kv .. n_kv + d, with d + 1 KV slots allocated. The row is
// laid out as d + 1 consecutive one-token rows of the same request (draft_index 0 .. d) whose
// KV lengths grow by one: every token's KV is stored before attention runs, so sub-row i
// attends causally to the request's KV and to the drafts before it, exactly like an extend
// of d + 1 tokens, yet each sub-row has its own logits and sample, and a batch of verify
// rows is an ordinary DECODE (or, beside a prefill chunk, MIXED) batch whose graph key is
// its row count. After the step the engine keeps the accepted tokens' KV and returns the
// rest at once (free_unused_slots).
#pragma once
#include <cstdint>
#include <deque>
#include <vector>

#include "kv/radix_cache.h"
#include "kv/slot_allocator.h"
#include "runtime/forward_batch.h"
#include "scheduler/request.h"

namespace seam {

struct SchedulerConfig {
  int chunked_prefill_size = 8192;  // token budget of one step
  int max_running_requests = 256;
  bool enable_mixed_chunk = false;
  int max_context = 4096;           // page-table columns: prompt + output never exceeds it
};

struct SchedulerStats {
  uint64_t steps_extend = 0, steps_decode = 0, steps_mixed = 0;
  uint64_t retractions = 0;
  uint64_t prefix_cache_hit_tokens = 0;
  uint64_t prefill_tokens = 0;  // tokens computed in prefill rows
  int peak_running = 0;
  uint64_t budget_violations = 0;  // must stay 0 (checked by tests)
  uint64_t verify_rows = 0;        // verify rows scheduled (requests with drafts)
  uint64_t drafts_dropped_for_kv = 0;  // steps whose drafts were dropped to fit the KV pool
};

// One sequence of a batch being built.
struct ScheduledSeq {
  Request* req = nullptr;
  int n_new = 0;       // tokens fed this step
  bool sample = false; // this step produces the request's next token
  int draft_index = -1; // >= 0: sub-row draft_index of the request's verify row
};

class Scheduler {
 public:
  Scheduler(const SchedulerConfig& config, SlotAllocator& slots, RadixCache& cache);

  void add(Request* req);  // to the back of the waiting queue
  // Removes a request wherever it is and frees its KV; returns false if unknown.
  bool abort(Request* req);
  // Builds the next batch; mode idle when there is nothing to run. Each row
  // carries its request id; the batch carries the page-table writes.
  ForwardBatch schedule();
  // Releases a finished request's KV (into the prefix cache when on) and its row.
  void finish(Request* req);
  // Frees a running request's slots past n_kv (a verify row's rejected drafts), at once.
  void free_unused_slots(Request* req);

  bool has_work() const { return !waiting_.empty() || !running_.empty(); }
  size_t n_waiting() const { return waiting_.size(); }
  size_t n_running() const { return running_.size(); }
  const SchedulerStats& stats() const { return stats_; }
  const SchedulerConfig& config() const { return config_; }
  const std::deque<Request*>& waiting() const { return waiting_; }
  const std::vector<Request*>& running() const { return running_; }

 private:
  bool alloc_slots(Request* r, int n);  // evicts from the prefix cache if needed
  void release_kv(Request* r);
  void retract(Request* r);
  // Invariant (EngineCore::validate): a request whose prompt plus outputs needs at most
  // kv_pool_tokens slots -- n_prompt + min(max_new_tokens, max_context + 1 - n_prompt) - 1,
  // as the last sampled token is never fed back -- is admitted into an empty pool. So
  // admission reserves the remaining prompt, and the first decode step's slot only when
  // the request decodes after the prefill (decodes_after_prefill): a prompt of the whole
  // pool with max_new_tokens 1 fits, one with max_new_tokens 2 is refused by validate.
  bool admit(Request* r);
  bool decodes_after_prefill(const Request& r) const;
  void take_prefill(int budget, std::vector<ScheduledSeq>& out);
  bool ensure_decode_slots(std::vector<Request*>& decoding);
  void build(ForwardBatch& fb, ForwardMode mode, int n_prefill_seqs);
  void write_page_table(int row, int begin, const int32_t* slots, int n);

  SchedulerConfig config_;
  SlotAllocator& slots_;
  RadixCache& cache_;
  std::deque<Request*> waiting_;
  std::vector<Request*> running_;  // admission order
  std::vector<int> free_rows_;
  std::vector<ScheduledSeq> scheduled_;  // the batch being built
  ForwardBatch pending_;                 // page-table writes of the batch being built
  uint64_t admit_counter_ = 0;
  SchedulerStats stats_;
};

}  // namespace seam
