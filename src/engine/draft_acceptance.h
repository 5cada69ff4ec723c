// Draft acceptance: which drafts of a verify row the target keeps.
//
// The engine's rule (count_accepted): sub-row i of a verify row samples the target's token
// y_i exactly as a plain decode step at that output index would (same logits pipeline,
// same (seed, step) draw); draft i + 1 is accepted while it equals y_i, and the row emits
// y_0 .. y_a (a accepted drafts, then the target's own token). Greedy: the longest prefix
// of drafts equal to the target's argmax, then the argmax. Sampling with a deterministic
// draft (q one-hot on x, as NGRAM): P(accept) = P(y = x) = p(x), and on rejection y is p
// with x removed and renormalised -- the standard rejection rule with q = one-hot, whose
// output is distributed as p. So speculative output is the non-speculative output itself,
// token for token, for every seed.
//
// The general rule (rejection_step) is the one a draft model with its own distribution q
// needs (STANDALONE, EAGLE): accept x ~ q with probability min(1, p(x) / q(x)), else draw
// from max(0, p - q) renormalised. With q one-hot it reduces to the rule above.
#pragma once
#include <cstdint>

namespace seam {

// Drafts accepted: the longest prefix with drafts[i] == target[i] (target[i]: the token
// sampled at sub-row i, i < n_drafts).
int count_accepted(const int32_t* drafts, int n_drafts, const int32_t* target);

struct RejectionStep {
  int32_t token = -1;
  bool accepted = false;
};

// One position of the general rule over a vocabulary of `vocab` probabilities (each sums to
// 1): draft x drawn from q; u_accept and u_resample uniform in [0, 1).
RejectionStep rejection_step(const float* p, const float* q, int vocab, int32_t x, double u_accept, double u_resample);

}  // namespace seam
