// DraftProposer: proposes the tokens a speculative verify row checks (scheduler.h). The
// engine asks once per step, for the decoding requests that may speculate, before the
// scheduler builds the batch; a proposer writes each request's Request::draft_ids (at most
// its max_drafts, possibly none). Host-side prompt lookup (NgramProposer) is one; a draft
// model (STANDALONE) or an EAGLE-style head is another: it gets the whole batch at once so
// that it can run its own batched steps, and it may keep per-request state keyed by id.
#pragma once
#include <cstdint>
#include <vector>

#include "scheduler/request.h"

namespace seam {

class DraftProposer {
 public:
  virtual ~DraftProposer() = default;
  // reqs[i] gets at most max_drafts[i] (>= 1) drafts in reqs[i]->draft_ids (cleared first).
  virtual void propose(const std::vector<Request*>& reqs, const std::vector<int>& max_drafts) = 0;
  // The request finished or failed: drop whatever the proposer keeps for it.
  virtual void release(uint64_t /*request_id*/) {}
};

}  // namespace seam
