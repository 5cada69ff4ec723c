// StandaloneProposer (--speculative-algorithm STANDALONE): a smaller draft model of the
// same vocabulary proposes the drafts, in its own runner (its own step buffers, KV pool and
// decode / piecewise graphs captured at start-up). The draft decodes greedily, so its
// proposal is deterministic (q one-hot) and the target accepts it by the same rule as
// NGRAM's (draft_acceptance.h): greedy output is unchanged, sampled output is the
// non-speculative output for the same seed.
//
// Per request the draft keeps KV for a prefix of the request's sequence (DraftSeq::tokens);
// each proposal first drops what the target rejected (the part that no longer matches),
// then feeds the rest of the sequence (catch-up: the whole prompt the first time, in
// chunks; one token in steady state) and decodes k - 1 more steps. The draft page table
// uses the target's page-table row of the request (both have max_running_requests rows);
// a request admitted again (after a retraction) starts over. Drafts only ever cost speed:
// the target verifies every one.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/dtype.h"
#include "engine/draft_proposer.h"
#include "kv/slot_allocator.h"

namespace seam {

class Backend;
class KvPool;
class LlamaModel;
class ModelRunner;
struct GraphConfig;
struct ForwardBatch;


struct StandaloneShape {
  int n_slots = 0;        // draft KV pool slots (scratch included)
  int max_reqs = 0;       // page-table rows: the target's max_running_requests
  int max_context = 0;
  int chunk_tokens = 0;   // token budget of one catch-up step
  int max_rows = 0;       // requests drafting at once (--speculative-max-batch-size)
};

class StandaloneProposer : public DraftProposer {
 public:
  StandaloneProposer(Backend& backend, const std::string& model_path, DType dtype, int target_vocab,
                     const StandaloneShape& shape, const GraphConfig& graphs);
  ~StandaloneProposer() override;
  void propose(const std::vector<Request*>& reqs, const std::vector<int>& max_drafts) override;
  void release(uint64_t request_id) override;
  ModelRunner& runner() { return *runner_; }
  int n_free_slots() const { return slots_.n_free(); }

 private:
  struct DraftSeq {
    int row = -1;
    uint64_t admit_order = 0;     // the admission the KV belongs to (retraction starts over)
    std::vector<int32_t> tokens;  // tokens whose KV the draft pool holds, by position
    std::vector<int32_t> slots;   // slots[p]: KV of position p (may run past tokens: allocated)
  };
  void drop(DraftSeq& d);
  // Runs one draft step; sampled[i] is row i's greedy token.
  void step(ForwardBatch& fb, std::vector<int32_t>& sampled);

  StandaloneShape shape_;
  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<KvPool> kv_;
  std::unique_ptr<ModelRunner> runner_;
  SlotAllocator slots_;
  std::unordered_map<uint64_t, DraftSeq> seqs_;
};

}  // namespace seam
