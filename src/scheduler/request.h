// Request: one generation request as the scheduler and engine see it.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/finish_reason.h"
#include "api/sampling_params.h"

namespace seam {

class IncrementalDetokenizer;
struct RadixNode;

using Clock = std::chrono::steady_clock;

struct Request {
  uint64_t id = 0;
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> output_ids;
  SamplingParams params;
  uint64_t seed = 0;  // params.seed or drawn by the engine

  // ---- KV state (owned by the scheduler) ----
  int req_row = -1;                // page-table row while running, -1 while waiting
  std::vector<int32_t> slots;      // KV slot of position p = slots[p]
  int n_kv = 0;                    // positions whose KV is written
  int n_prefix_shared = 0;         // leading slots borrowed from the prefix cache
  RadixNode* prefix_node = nullptr;  // locked node of the borrowed prefix
  bool decoding = false;           // all pending tokens processed; one new token per step
  uint64_t admit_order = 0;        // admission counter, newest are retracted first
  int n_retractions = 0;
  // Speculative decoding: tokens proposed to follow the sequence, verified by the next step
  // (a verify row, scheduler.h). Set before each schedule() by the engine's proposer, cleared
  // when the request leaves the running set; never part of the sequence until accepted.
  std::vector<int32_t> draft_ids;

  // ---- output state ----
  FinishReason finish = FinishReason::none;
  std::string matched_stop;        // the stop string or id text that ended it
  std::unique_ptr<IncrementalDetokenizer> detok;
  std::string text;                // decoded output text so far (stop strings trimmed at finish)
  size_t n_text_sent = 0;          // bytes of `text` already streamed
  // With params.prompt_logprobs: one per prompt token, filled by position as the prompt is
  // prefilled (a re-prefilled chunk writes the same values again); sent with the first output.
  std::vector<TokenLogprob> prompt_logprobs;
  bool prompt_logprobs_sent = false;

  // ---- timing ----
  Clock::time_point t_arrival, t_admitted, t_first_token, t_last_token;
  std::vector<double> token_times_s;  // seconds since arrival of each output token

  // The full token sequence: prompt then output.
  int n_total() const { return int(prompt_ids.size() + output_ids.size()); }
  int32_t token_at(int p) const {
    return p < int(prompt_ids.size()) ? prompt_ids[size_t(p)] : output_ids[size_t(p) - prompt_ids.size()];
  }
  // Tokens still to be fed to the model before the next sample.
  int n_pending() const { return n_total() - n_kv; }
  bool finished() const { return finish != FinishReason::none; }
  // A step fed n_new tokens (their KV is written now); with `sampled`, its
  // token was the last pending one and the request decodes from here on.
  void commit_step(int n_new, bool sampled) {
    n_kv += n_new;
    if (sampled) decoding = true;
  }
};

}  // namespace seam
