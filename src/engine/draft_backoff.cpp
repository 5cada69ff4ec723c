#include "engine/draft_backoff.h"

#include <algorithm>

namespace seam {

bool DraftBackoff::skip_step() {
  if (skip_left_ <= 0) return false;
  --skip_left_;
  return true;
}

void DraftBackoff::on_verify(int n_accepted) {
  if (max_skip_ <= 0) return;
  if (n_accepted > 0) {
    skip_ = skip_left_ = 0;
    return;
  }
  skip_ = skip_ == 0 ? 1 : std::min(2 * skip_, max_skip_);
  skip_left_ = skip_;
}

}  // namespace seam
