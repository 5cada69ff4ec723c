// StepBuffers: the fixed-address device buffers of one forward step. Allocated
// once at start-up for the largest step (max_tokens rows, max_seqs sequences);
// every graph bakes these addresses, so they never move.
#pragma once
#include <vector>

#include "backend/backend.h"
#include "model/forward_buffers.h"
#include "model/model_config.h"
#include "api/sampling_params.h"

namespace seam {

struct StepBufferSizes {
  int max_tokens = 0;   // rows of the token-sized buffers
  int max_seqs = 0;     // rows of the sequence-sized buffers
  int max_penalty_entries = 0;
  // Whether a step may ask for logprobs: false (--disable-logprobs, a draft model's runner)
  // leaves out logprob_logits, the [max_seqs, vocab] float32 copy of the raw logits (with
  // 256 rows of a 128K vocabulary, 128 MiB). Decided at start-up: nothing is allocated later.
  bool logprobs = true;
};

// The model's part (ids, positions, slots, activations, last_idx, last_hidden, logits) is
// the ForwardBuffers base, which is all the model sees; the rest is the runtime's.
struct StepBuffers : ForwardBuffers {
  StepBuffers(Backend& backend, const ModelConfig& c, DType act, const StepBufferSizes& sizes);
  ~StepBuffers();
  StepBuffers(const StepBuffers&) = delete;
  StepBuffers& operator=(const StepBuffers&) = delete;

  StepBufferSizes sizes;
  // per sequence (the per-token tensors and last_idx / last_hidden / logits: ForwardBuffers)
  Tensor qo_indptr;      // [max_seqs + 1] i32
  Tensor seq_lens;       // [max_seqs] i32
  Tensor req_rows;       // [max_seqs] i32
  Tensor sampled;        // [max_seqs] i32
  Tensor temperature;    // [max_seqs] f32
  Tensor top_k;          // [max_seqs] i32
  Tensor top_p;          // [max_seqs] f32
  Tensor min_p;          // [max_seqs] f32
  Tensor seed;           // [max_seqs] i64
  Tensor step;           // [max_seqs] i32
  Tensor logprob_k;      // [max_seqs] i32: -1 (no logprobs) or the number of top alternatives
  // The step's page-table writes as (flat page-table index, slot) pairs, last in
  // the inputs block so that a step copies only the pairs it has.
  Tensor page_table_writes;  // [max_page_table_writes, 2] i32
  // penalties
  Tensor pen_indptr;     // [max_seqs + 1] i32
  Tensor pen_tokens;     // [max_penalty_entries] i32
  Tensor pen_counts;     // [max_penalty_entries] i32
  Tensor pen_frequency;  // [max_seqs] f32
  Tensor pen_presence;   // [max_seqs] f32
  Tensor pen_repetition; // [max_seqs] f32
  // logit_bias (copied only in steps where some row uses it), CSR over sequences
  Tensor bias_indptr;    // [max_seqs + 1] i32
  Tensor bias_tokens;    // [max_seqs * kMaxLogitBias] i32
  Tensor bias_values;    // [max_seqs * kMaxLogitBias] f32
  // logprobs: the raw logits of the step, saved before logit_bias, penalties and sampling
  // modify `logits` in place (copied only in steps where some row asks for logprobs);
  // undefined when sizes.logprobs is false
  Tensor logprob_logits; // [max_seqs, vocab] f32
  // The step's outputs, one device block [sampled | lp_sampled | lp_top_ids | lp_top] with a
  // pinned host mirror, so the ids and the logprobs come back in one copy (the ids alone
  // when no row asks for logprobs).
  Tensor lp_sampled;     // [max_seqs] f32
  Tensor lp_top_ids;     // [max_seqs, kMaxTopLogprobs] i32
  Tensor lp_top;         // [max_seqs, kMaxTopLogprobs] f32
  // Structured output: one device block [mask_rows | bitmask] with a pinned host mirror. A
  // step with m constrained rows copies the row list and the first m mask rows, nothing else;
  // a step without constraints copies nothing.
  Tensor mask_rows;      // [max_seqs] i32: the logit row of each mask row
  Tensor bitmask;        // [max_seqs, n_mask_words] i32 storage of u32 words
  int n_mask_words = 0;  // ceil(vocab / 32)
  int32_t* mask_rows_host() const { return static_cast<int32_t*>(masks_host_); }
  uint32_t* bitmask_host(int i) const {
    return reinterpret_cast<uint32_t*>(static_cast<char*>(masks_host_) + mask_rows_bytes_) +
           int64_t(i) * n_mask_words;
  }
  // Issues the h2d of the row list and the first n_masked mask rows (pinned: returns at once).
  void upload_masks(int n_masked);

  size_t bytes = 0;

  // Every per-step input above (ids .. page_table_writes) lives in one device
  // block with a host mirror (pinned on CUDA): the runner writes the mirror and
  // uploads the block with one copy per step -- the fixed inputs and the first
  // n_page_table_writes pairs.
  template <typename T>
  T* host(const Tensor& t) const {
    return reinterpret_cast<T*>(static_cast<char*>(inputs_host_) + (static_cast<char*>(t.data) - static_cast<char*>(inputs_dev_)));
  }
  void upload_inputs(int n_page_table_writes = 0);
  int max_page_table_writes() const { return int(page_table_writes.size(0)); }
  // Pinned host landing place of the outputs block: a copy into pageable memory would
  // block the host until the GPU is done, hiding the wait inside the launch phase.
  // sampled_host is its start (`sampled`); out_host(t) is t's place in it.
  int32_t* sampled_host = nullptr;
  template <typename T>
  const T* out_host(const Tensor& t) const {
    return reinterpret_cast<const T*>(reinterpret_cast<const char*>(sampled_host) +
                                      (static_cast<const char*>(t.data) - static_cast<const char*>(sampled.data)));
  }
  // Issues the d2h of the outputs: the sampled ids, and with `with_logprobs` the whole block.
  void download_outputs(int n_seqs, bool with_logprobs);

 private:
  Backend& backend_;
  std::vector<void*> allocations_;
  void* inputs_dev_ = nullptr;
  void* inputs_host_ = nullptr;
  size_t inputs_bytes_ = 0;
  size_t fixed_inputs_bytes_ = 0;  // the block up to page_table_writes
  size_t outputs_bytes_ = 0;
  void* masks_host_ = nullptr;
  size_t mask_rows_bytes_ = 0;  // the row list's part of the masks block, 64-byte aligned
  Tensor make(DType t, std::initializer_list<int64_t> dims);
  Tensor make_input(DType t, std::initializer_list<int64_t> dims);
};

}  // namespace seam
