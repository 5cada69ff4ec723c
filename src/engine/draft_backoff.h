// DraftBackoff: per-request adaptive drafting (issue 27). A verify row costs more than a
// plain decode row (at batch 1 on the H200, 8B shape, k = 4: 1.154x a decode step,
// scripts/gpu_spec.sh), so a request whose drafts are all rejected should stop paying for
// drafts it does not get. The rule: after a verify row that accepted nothing, the request
// drafts nothing for the next n of its decode steps, n = 1, 2, 4, ... doubling on each
// further all-rejected verify row up to max_skip; any accepted draft resets n to 0 (the
// request drafts on every step again). k itself stays fixed: the verify cost is nearly
// flat in k at small batches (1.12x at k = 1 vs 1.15x at k = 4), so shrinking k would save
// little and would cap the win of the long runs that make speculation pay.
//
// Worst case (nothing ever accepted): the i-th verify row (from 0) comes at decode step
// 2^i + i - 1 (0, 2, 5, 10, 19, 36, 69, 134 for max_skip 64), then one every max_skip + 1
// steps; over T steps that is at most log2(T + 1) + 1 + T / (max_skip + 1) verify rows, and
// the overhead is the verify-step cost times that fraction of the steps (512 steps: 13 rows,
// 2.5 %; in the long run 1 / 65 = 1.5 % of the steps).
#pragma once

namespace seam {

class DraftBackoff {
 public:
  // max_skip <= 0: the back-off is off (the request drafts on every step).
  explicit DraftBackoff(int max_skip = 0) : max_skip_(max_skip) {}

  // Asked once per decode step in which the request could draft: true when it drafts nothing
  // this step (and the step counts against the back-off).
  bool skip_step();
  // A verify row of the request was committed with n_accepted of its drafts accepted.
  void on_verify(int n_accepted);

  int skip_left() const { return skip_left_; }
  int current_skip() const { return skip_; }

 private:
  int max_skip_;
  int skip_ = 0;       // the back-off the last all-rejected verify row set (0: none)
  int skip_left_ = 0;  // steps still to skip
};

}  // namespace seam
