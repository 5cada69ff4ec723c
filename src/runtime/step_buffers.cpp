#include "runtime/step_buffers.h"

#include <cstring>

namespace seam {

Tensor StepBuffers::make(DType t, std::initializer_list<int64_t> dims) {
  Tensor probe(nullptr, t, backend_.device(), dims);
  void* p = backend_.alloc(probe.nbytes() + 64);
  allocations_.push_back(p);
  bytes += probe.nbytes();
  probe.data = p;
  return probe;
}

Tensor StepBuffers::make_input(DType t, std::initializer_list<int64_t> dims) {
  // Placed at an offset inside the inputs block (allocated once all are laid out).
  Tensor probe(reinterpret_cast<void*>(inputs_bytes_), t, backend_.device(), dims);
  inputs_bytes_ += (probe.nbytes() + 63) / 64 * 64;
  return probe;
}

void StepBuffers::upload_inputs(int n_page_table_writes) {
  SEAM_ASSERT(n_page_table_writes >= 0 && n_page_table_writes <= max_page_table_writes());
  backend_.copy_h2d(inputs_dev_, inputs_host_, fixed_inputs_bytes_ + size_t(n_page_table_writes) * 8);
}

StepBuffers::StepBuffers(Backend& backend, const ModelConfig& c, DType a, const StepBufferSizes& s)
    : sizes(s), backend_(backend) {
  const int64_t T = s.max_tokens, S = s.max_seqs, P = std::max(1, s.max_penalty_entries);
  input_ids = make_input(DType::i32, {T});
  positions = make_input(DType::i32, {T});
  out_cache_loc = make_input(DType::i32, {T});
  qo_indptr = make_input(DType::i32, {S + 1});
  seq_lens = make_input(DType::i32, {S});
  req_rows = make_input(DType::i32, {S});
  last_idx = make_input(DType::i32, {S});
  temperature = make_input(DType::f32, {S});
  top_k = make_input(DType::i32, {S});
  top_p = make_input(DType::f32, {S});
  min_p = make_input(DType::f32, {S});
  seed = make_input(DType::i64, {S});
  step = make_input(DType::i32, {S});
  fixed_inputs_bytes_ = inputs_bytes_;
  // A step writes one entry per token it feeds, plus the prefix-cache hits of the
  // requests it admits; twice the token rows covers nearly every step, and the
  // runner writes any excess directly.
  page_table_writes = make_input(DType::i32, {2 * T, 2});
  inputs_dev_ = backend_.alloc(inputs_bytes_);
  allocations_.push_back(inputs_dev_);
  inputs_host_ = backend_.alloc_host(inputs_bytes_);
  std::memset(inputs_host_, 0, inputs_bytes_);
  sampled_host = static_cast<int32_t*>(backend_.alloc_host(size_t(S) * sizeof(int32_t)));
  bytes += inputs_bytes_;
  for (Tensor* t : {&input_ids, &positions, &out_cache_loc, &qo_indptr, &seq_lens, &req_rows, &last_idx,
                    &temperature, &top_k, &top_p, &min_p, &seed, &step, &page_table_writes})
    t->data = static_cast<char*>(inputs_dev_) + reinterpret_cast<size_t>(t->data);
  backend_.copy_h2d(inputs_dev_, inputs_host_, inputs_bytes_);
  residual = make(a, {T, c.hidden_size});
  normed = make(a, {T, c.hidden_size});
  qkv = make(a, {T, c.q_size() + 2 * c.kv_size()});
  attn_out = make(a, {T, c.q_size()});
  gate_up = make(a, {T, 2 * c.intermediate_size});
  act = make(a, {T, c.intermediate_size});
  last_hidden = make(a, {S, c.hidden_size});
  logits = make(DType::f32, {S, c.vocab_size});
  sampled = make(DType::i32, {S});
  pen_indptr = make(DType::i32, {S + 1});
  pen_tokens = make(DType::i32, {P});
  pen_counts = make(DType::i32, {P});
  pen_frequency = make(DType::f32, {S});
  pen_presence = make(DType::f32, {S});
  pen_repetition = make(DType::f32, {S});
  // Defined contents everywhere: padded rows of a graph read these buffers.
  // Defined contents everywhere: padded rows of a graph read these buffers.
  for (Tensor* t : {&sampled, &pen_indptr}) backend_.fill(*t, 0.f);
  for (Tensor* t : {&residual, &normed, &qkv, &attn_out, &gate_up, &act, &last_hidden, &logits,
                    &pen_frequency, &pen_presence})
    backend_.fill(*t, 0.f);
  backend_.fill(pen_repetition, 1.f);
  backend_.synchronize();
}

StepBuffers::~StepBuffers() {
  for (void* p : allocations_) backend_.release(p);
  backend_.release_host(inputs_host_);
  backend_.release_host(sampled_host);
}

}  // namespace seam
