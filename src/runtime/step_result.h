// StepResult: what one forward step produced, per sequence row, in batch
// order. The engine commits a step from it alone: the row's request id, how
// many tokens were fed (their KV is now written), and the sampled id.
// With logprobs asked, the sampled token's logprob and the top alternatives
// (the same device->host copy as the ids). A verify row (ForwardBatch::draft_index) answers
// with one SeqResult per sub-row; the engine accepts drafts from them (draft_acceptance.h).
#pragma once
#include <cstdint>
#include <vector>

#include "api/token_logprob.h"

namespace seam {

struct SeqResult {
  uint64_t request_id = 0;
  int32_t n_new = 0;       // tokens fed this step (KV written for them)
  bool sample = false;     // sampled_id is the request's next token (else a mid-prompt chunk)
  int32_t draft_index = -1;  // ForwardBatch::draft_index: >= 0 for a verify row's sub-row
  int32_t sampled_id = -1;
  bool has_logprobs = false;  // the row asked (SeqSampling::logprobs >= 0) and sampled
  TokenLogprob logprobs;      // of sampled_id, with the row's top-k
  // Prompt logprobs this step computed (ForwardBatch::prompt_lp_*): of the prompt tokens
  // at positions prompt_lp_first, prompt_lp_first + 1, ...
  int32_t prompt_lp_first = 0;
  std::vector<TokenLogprob> prompt_logprobs;
};

struct StepResult {
  std::vector<SeqResult> seqs;
};

}  // namespace seam
