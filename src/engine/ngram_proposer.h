// NgramProposer (--speculative-algorithm NGRAM): prompt lookup on the host. For each
// request it takes the last w tokens of its sequence (prompt + output), w from the max
// window down to the min window, finds the most recent earlier place where those w tokens
// occur, and proposes the tokens that followed there (up to the request's limit). Costs
// O(n * w) host work per request and step; no device work, no state between steps.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/draft_proposer.h"

namespace seam {

class NgramProposer : public DraftProposer {
 public:
  NgramProposer(int min_window, int max_window);
  void propose(const std::vector<Request*>& reqs, const std::vector<int>& max_drafts) override;
  // The lookup itself on one token sequence: up to max_drafts tokens into `out` (cleared).
  void propose_for(const std::vector<int32_t>& tokens, int max_drafts, std::vector<int32_t>& out) const;

 private:
  int min_window_, max_window_;
  std::vector<int32_t> tokens_;  // scratch: the sequence being looked up
};

}  // namespace seam
