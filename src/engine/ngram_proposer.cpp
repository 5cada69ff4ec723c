#include "engine/ngram_proposer.h"

#include <algorithm>

#include "core/error.h"

namespace seam {

NgramProposer::NgramProposer(int min_window, int max_window) : min_window_(min_window), max_window_(max_window) {
  SEAM_CHECK(min_window >= 1 && min_window <= max_window, "n-gram windows [", min_window, ", ", max_window,
             "] are invalid");
}

void NgramProposer::propose_for(const std::vector<int32_t>& tokens, int max_drafts, std::vector<int32_t>& out) const {
  out.clear();
  const int n = int(tokens.size());
  if (max_drafts <= 0) return;
  // Longest window first: a longer match predicts better. The suffix itself starts at n - w;
  // a match must start before it (s < n - w) so that something follows it.
  for (int w = std::min(max_window_, n - 1); w >= min_window_; --w) {
    const int32_t* suffix = tokens.data() + (n - w);
    for (int s = n - w - 1; s >= 0; --s) {
      if (!std::equal(suffix, suffix + w, tokens.data() + s)) continue;
      const int from = s + w, to = std::min(n, from + max_drafts);
      out.assign(tokens.begin() + from, tokens.begin() + to);
      return;
    }
  }
}

void NgramProposer::propose(const std::vector<Request*>& reqs, const std::vector<int>& max_drafts) {
  SEAM_ASSERT(reqs.size() == max_drafts.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    Request& r = *reqs[i];
    tokens_.assign(r.prompt_ids.begin(), r.prompt_ids.end());
    tokens_.insert(tokens_.end(), r.output_ids.begin(), r.output_ids.end());
    propose_for(tokens_, max_drafts[i], r.draft_ids);
  }
}

}  // namespace seam
