// StepTiming: where the wall time of one ModelRunner::forward went, phase by
// phase, and the device time of the step (Backend step timer). The three host
// phases are consecutive: prepare + launch + wait is the wall time of forward().
#pragma once

namespace seam {

struct StepTiming {
  // forward() entry -> the inputs are enqueued: routing, writing the padded batch into
  // the pinned host mirror, issuing its one H2D copy (and the penalty copies).
  double prepare_ms = 0;
  // -> the d2h of the sampled ids is enqueued: graph replays or eager op launches,
  // logits, penalties and sampling (CUDA: host launch time, the GPU runs behind it).
  double launch_ms = 0;
  // -> the sampled ids are on the host: the host blocks until the GPU is done.
  double wait_ms = 0;
  // The device's span from the first input copy to the d2h of the ids (Backend step timer).
  double gpu_ms = 0;
  // Structured output (inside launch_ms): host time in the grammar mask callbacks, the rows
  // masked, and how much of that time the device had already finished the forward (the part
  // the masks were on the critical path; all of it on a synchronous backend).
  double mask_ms = 0;
  double mask_exposed_ms = 0;
  int n_masked_rows = 0;
  // ForwardBatch::while_device_runs: its host time, between launch and wait (not in either).
  double while_device_runs_ms = 0;
};

}  // namespace seam
