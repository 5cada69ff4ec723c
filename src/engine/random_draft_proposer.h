// RandomDraftProposer: speculation's worst case, for benchmarks (bench-one-batch --mode
// generate --worst-case-drafts; EngineConfig::bench_worst_case_drafts, never a serving flag).
// It does the NGRAM lookup (so its host cost is paid as in serving), then replaces the result
// with the request's full max_drafts tokens drawn uniformly from the vocabulary: every verify
// row is as long as k allows and its drafts are accepted only by chance (about 1 / vocab
// each; the accept stats show what was). Output is unchanged: acceptance only ever keeps
// tokens the target itself sampled.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "engine/ngram_proposer.h"

namespace seam {

class RandomDraftProposer : public NgramProposer {
 public:
  RandomDraftProposer(int min_window, int max_window, int vocab_size);
  void propose(const std::vector<Request*>& reqs, const std::vector<int>& max_drafts) override;

 private:
  int vocab_size_;
  std::mt19937 rng_{27};
};

}  // namespace seam
