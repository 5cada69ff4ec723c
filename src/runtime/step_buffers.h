// StepBuffers: the fixed-address device buffers of one forward step. Allocated
// once at start-up for the largest step (max_tokens rows, max_seqs sequences);
// every graph bakes these addresses, so they never move.
#pragma once
#include <vector>

#include "backend/backend.h"
#include "model/forward_buffers.h"
#include "model/model_config.h"

namespace seam {

struct StepBufferSizes {
  int max_tokens = 0;   // rows of the token-sized buffers
  int max_seqs = 0;     // rows of the sequence-sized buffers
  int max_penalty_entries = 0;
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
  // Pinned host landing place of `sampled` (max_seqs i32): a copy into pageable memory
  // would block the host until the GPU is done, hiding the wait inside the launch phase.
  int32_t* sampled_host = nullptr;

 private:
  Backend& backend_;
  std::vector<void*> allocations_;
  void* inputs_dev_ = nullptr;
  void* inputs_host_ = nullptr;
  size_t inputs_bytes_ = 0;
  size_t fixed_inputs_bytes_ = 0;  // the block up to page_table_writes
  Tensor make(DType t, std::initializer_list<int64_t> dims);
  Tensor make_input(DType t, std::initializer_list<int64_t> dims);
};

}  // namespace seam
