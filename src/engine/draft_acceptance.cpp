#include "engine/draft_acceptance.h"

#include <algorithm>

#include "core/error.h"

namespace seam {

int count_accepted(const int32_t* drafts, int n_drafts, const int32_t* target) {
  int a = 0;
  while (a < n_drafts && drafts[a] == target[a]) ++a;
  return a;
}

RejectionStep rejection_step(const float* p, const float* q, int vocab, int32_t x, double u_accept,
                             double u_resample) {
  SEAM_ASSERT(x >= 0 && x < vocab && q[x] > 0.f, "the draft token must have draft probability > 0");
  if (u_accept * double(q[x]) < double(p[x])) return {x, true};  // u < p(x) / q(x), without dividing
  double total = 0;
  for (int t = 0; t < vocab; ++t) total += std::max(0.0, double(p[t]) - double(q[t]));
  // total > 0 whenever a rejection can happen (p != q somewhere p > q).
  double c = u_resample * total;
  int32_t last = -1;
  for (int t = 0; t < vocab; ++t) {
    const double r = std::max(0.0, double(p[t]) - double(q[t]));
    if (r <= 0) continue;
    last = t;
    if (c < r) return {t, false};
    c -= r;
  }
  SEAM_ASSERT(last >= 0, "rejection with no residual mass");
  return {last, false};  // rounding at the top end
}

}  // namespace seam
