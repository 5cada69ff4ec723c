#include "runtime/step_buffers.h"

namespace seam {

Tensor StepBuffers::make(DType t, std::initializer_list<int64_t> dims) {
  Tensor probe(nullptr, t, backend_.device(), dims);
  void* p = backend_.alloc(probe.nbytes() + 64);
  allocations_.push_back(p);
  bytes += probe.nbytes();
  probe.data = p;
  return probe;
}

StepBuffers::StepBuffers(Backend& backend, const ModelConfig& c, DType a, const StepBufferSizes& s)
    : sizes(s), backend_(backend) {
  const int64_t T = s.max_tokens, S = s.max_seqs, P = std::max(1, s.max_penalty_entries);
  input_ids = make(DType::i32, {T});
  positions = make(DType::i32, {T});
  out_cache_loc = make(DType::i32, {T});
  residual = make(a, {T, c.hidden_size});
  normed = make(a, {T, c.hidden_size});
  delta = make(a, {T, c.hidden_size});
  qkv = make(a, {T, c.q_size() + 2 * c.kv_size()});
  attn_out = make(a, {T, c.q_size()});
  gate_up = make(a, {T, 2 * c.intermediate_size});
  act = make(a, {T, c.intermediate_size});
  qo_indptr = make(DType::i32, {S + 1});
  seq_lens = make(DType::i32, {S});
  req_rows = make(DType::i32, {S});
  last_idx = make(DType::i32, {S});
  last_hidden = make(a, {S, c.hidden_size});
  logits = make(DType::f32, {S, c.vocab_size});
  sampled = make(DType::i32, {S});
  temperature = make(DType::f32, {S});
  top_k = make(DType::i32, {S});
  top_p = make(DType::f32, {S});
  min_p = make(DType::f32, {S});
  seed = make(DType::i64, {S});
  step = make(DType::i32, {S});
  pen_indptr = make(DType::i32, {S + 1});
  pen_tokens = make(DType::i32, {P});
  pen_counts = make(DType::i32, {P});
  pen_frequency = make(DType::f32, {S});
  pen_presence = make(DType::f32, {S});
  pen_repetition = make(DType::f32, {S});
  // Defined contents everywhere: padded rows of a graph read these buffers.
  for (Tensor* t : {&input_ids, &positions, &out_cache_loc, &qo_indptr, &seq_lens, &req_rows, &last_idx,
                    &sampled, &top_k, &step, &pen_indptr})
    backend_.fill(*t, 0.f);
  for (Tensor* t : {&residual, &normed, &delta, &qkv, &attn_out, &gate_up, &act, &last_hidden, &logits,
                    &temperature, &top_p, &min_p, &pen_frequency, &pen_presence})
    backend_.fill(*t, 0.f);
  backend_.fill(pen_repetition, 1.f);
  backend_.copy_h2d(seed.data, std::vector<int64_t>(size_t(S), 0).data(), size_t(S) * 8);
  backend_.synchronize();
}

StepBuffers::~StepBuffers() {
  for (void* p : allocations_) backend_.release(p);
}

}  // namespace seam
