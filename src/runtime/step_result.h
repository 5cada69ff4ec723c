// StepResult: what one forward step produced, per sequence row, in batch
// order. The engine commits a step from it alone: the row's request id, how
// many tokens were fed (their KV is now written), and the sampled id.
// Room for per-row logprobs and speculative acceptance counts later.
#pragma once
#include <cstdint>
#include <vector>

namespace seam {

struct SeqResult {
  uint64_t request_id = 0;
  int32_t n_new = 0;       // tokens fed this step (KV written for them)
  bool sample = false;     // sampled_id is the request's next token (else a mid-prompt chunk)
  int32_t sampled_id = -1;
};

struct StepResult {
  std::vector<SeqResult> seqs;
};

}  // namespace seam
