// ForwardBatch: everything one forward step needs, on the host. The scheduler
// builds it; the ModelRunner copies it into fixed device buffers (StepBuffers)
// and runs it. Sequences are ordered prefill (extend) rows first, then decode
// rows (one token each); tokens follow the same order.
//
// A step is one-way: each row carries its request id and whether its sampled
// token is the request's next one, and the batch carries the page-table writes
// the scheduler's allocations need; the runner applies them before any of the
// step's kernels and answers with a StepResult (runtime/step_result.h), from
// which the engine commits without asking the scheduler again.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace seam {

enum class ForwardMode { extend, decode, mixed, idle };

inline const char* forward_mode_name(ForwardMode m) {
  switch (m) {
    case ForwardMode::extend: return "extend";
    case ForwardMode::decode: return "decode";
    case ForwardMode::mixed: return "mixed";
    case ForwardMode::idle: return "idle";
  }
  return "?";
}

struct SeqSampling {
  float temperature = 0.f;  // <= 0: greedy
  int32_t top_k = -1;
  float top_p = 1.f;
  float min_p = 0.f;
  uint64_t seed = 0;
  int32_t step = 0;  // index of the token being sampled (= output tokens so far)
  int32_t logprobs = -1;  // -1: none; else the sampled token's logprob and this many top ones
  // penalties (applied only when enabled)
  float frequency_penalty = 0.f;
  float presence_penalty = 0.f;
  float repetition_penalty = 1.f;
  bool uses_penalties() const {
    return frequency_penalty != 0.f || presence_penalty != 0.f || repetition_penalty != 1.f;
  }
};

// page_table[row][begin .. begin + n) = ForwardBatch::page_table_slots[offset .. offset + n)
struct PageTableWrite {
  int32_t row = 0;
  int32_t begin = 0;
  int32_t n = 0;
  int32_t offset = 0;
};

struct ForwardBatch {
  ForwardMode mode = ForwardMode::idle;
  std::vector<uint64_t> request_ids;   // [n_seqs] the request of each sequence
  std::vector<uint8_t> samples;        // [n_seqs] 1: the row's sampled id is its request's next token
                                       //   (0: a prompt chunk that is not the last one)
  std::vector<int32_t> input_ids;      // [n_tokens]
  std::vector<int32_t> positions;      // [n_tokens]
  std::vector<int32_t> out_cache_loc;  // [n_tokens] KV write slot of each token
  std::vector<int32_t> qo_indptr;      // [n_seqs + 1] ragged offsets (cu_seqlens of the new tokens)
  std::vector<int32_t> seq_lens;       // [n_seqs] KV length after this step
  std::vector<int32_t> req_rows;       // [n_seqs] page-table row of each sequence
  int n_prefill_seqs = 0;              // the first n_prefill_seqs sequences are extend rows
  // Speculative verify rows (scheduler.h): [n_seqs] or empty when the batch has none. -1: a
  // plain row; i >= 0: sub-row i of a verify row (i = 0 feeds the pending token, i > 0 draft
  // i); a verify row's sub-rows are consecutive one-token decode rows of one request.
  std::vector<int32_t> draft_index;
  std::vector<SeqSampling> sampling;   // [n_seqs]
  // Penalty inputs for the sequences that use penalties (CSR over sequences).
  std::vector<int32_t> penalty_indptr;  // [n_seqs + 1] or empty when no sequence uses penalties
  std::vector<int32_t> penalty_tokens;  // [nnz]
  std::vector<int32_t> penalty_counts;  // [nnz] occurrences in the output (0: prompt only)
  // logit_bias of the sequences that use it (CSR over sequences), applied before penalties.
  std::vector<int32_t> logit_bias_indptr;  // [n_seqs + 1] or empty when no sequence uses it
  std::vector<int32_t> logit_bias_tokens;  // [nnz]
  std::vector<float> logit_bias_values;    // [nnz]
  // Prompt logprobs (echo): for each listed token of this batch, the logprob of the prompt
  // token after it under its logits (the runner computes them after sampling, eagerly, from
  // the final hidden states of those tokens). Empty in most steps.
  std::vector<int32_t> prompt_lp_token;   // token index in this batch
  std::vector<int32_t> prompt_lp_target;  // the next prompt token (whose logprob this is)
  std::vector<int32_t> prompt_lp_k;       // top alternatives
  std::vector<int32_t> prompt_lp_seq;     // the sequence of the token
  // Structured output. mask_rows: the sequences whose sample is constrained (ascending; only
  // rows whose sample counts). fill_mask(row, words, n_words) writes that row's allowed-token
  // bitmask (bit t of words[t / 32] set = token t may be sampled; n_words = ceil(model vocab
  // / 32)) into every one of the n_words words: the buffer holds the last step's masks, a word
  // it skipped would keep them. The runner calls it on the
  // engine thread after the step's forward is enqueued, so that the host builds the masks
  // while the GPU computes the logits (runtime/ never sees the grammar: the engine owns the
  // matchers). Empty mask_rows: the step has no mask work, copy or op at all.
  std::vector<int32_t> mask_rows;
  std::function<void(int row, uint32_t* words, int n_words)> fill_mask;
  // Host work the runner does once per forward, after every kernel of the step (sampling and
  // the outputs' copy included) is enqueued and before it waits for them, so that it runs while
  // the device computes (the engine hands the last step's outputs to their callbacks there:
  // --enable-output-overlap). Unset: nothing. Never sent to tensor-parallel followers.
  std::function<void()> while_device_runs;
  // Page-table entries this step's allocations (and prefix-cache hits) set;
  // applied by the runner before the step's kernels run.
  std::vector<PageTableWrite> page_table_writes;
  std::vector<int32_t> page_table_slots;

  void add_page_table_write(int row, int begin, const int32_t* slots, int n) {
    if (n <= 0) return;
    page_table_writes.push_back({row, begin, n, int32_t(page_table_slots.size())});
    page_table_slots.insert(page_table_slots.end(), slots, slots + n);
  }

  int n_tokens() const { return int(input_ids.size()); }
  int n_seqs() const { return int(seq_lens.size()); }
  int n_prefill_tokens() const { return n_prefill_seqs ? qo_indptr[size_t(n_prefill_seqs)] : 0; }
  int n_decode_seqs() const { return n_seqs() - n_prefill_seqs; }
  bool has_verify_rows() const { return !draft_index.empty(); }
  int max_seq_len() const {
    int m = 0;
    for (int32_t l : seq_lens) m = l > m ? l : m;
    return m;
  }
};

// How one step ran: the path, its key, padding and (for eager) why.
enum class StepPath { decode_graph, piecewise_graph, eager };

struct StepReport {
  StepPath path = StepPath::eager;
  int graph_key = 0;         // the bucket replayed (tokens or batch size), 0 for eager
  int n_padding = 0;         // padded rows added to reach the bucket
  std::string eager_reason;  // empty unless path == eager
};

}  // namespace seam
