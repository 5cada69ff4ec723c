#include "engine/random_draft_proposer.h"

#include "core/error.h"

namespace seam {

RandomDraftProposer::RandomDraftProposer(int min_window, int max_window, int vocab_size)
    : NgramProposer(min_window, max_window), vocab_size_(vocab_size) {
  SEAM_CHECK(vocab_size >= 2, "a vocabulary of ", vocab_size, " tokens cannot be drafted from");
}

void RandomDraftProposer::propose(const std::vector<Request*>& reqs, const std::vector<int>& max_drafts) {
  NgramProposer::propose(reqs, max_drafts);  // the lookup's host cost, as in serving
  std::uniform_int_distribution<int32_t> token(0, vocab_size_ - 1);
  for (size_t i = 0; i < reqs.size(); ++i) {
    std::vector<int32_t>& d = reqs[i]->draft_ids;
    d.resize(size_t(max_drafts[i]));
    for (int32_t& t : d) t = token(rng_);
  }
}

}  // namespace seam
