#include "runtime/step_buffers.h"

#include <algorithm>
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
  logprob_k = make_input(DType::i32, {S});
  fixed_inputs_bytes_ = inputs_bytes_;
  // A step writes one entry per token it feeds, plus the prefix-cache hits of the
  // requests it admits; twice the token rows covers nearly every step, and the
  // runner writes any excess directly.
  page_table_writes = make_input(DType::i32, {2 * T, 2});
  inputs_dev_ = backend_.alloc(inputs_bytes_);
  allocations_.push_back(inputs_dev_);
  inputs_host_ = backend_.alloc_host(inputs_bytes_);
  std::memset(inputs_host_, 0, inputs_bytes_);
  bytes += inputs_bytes_;
  for (Tensor* t : {&input_ids, &positions, &out_cache_loc, &qo_indptr, &seq_lens, &req_rows, &last_idx,
                    &temperature, &top_k, &top_p, &min_p, &seed, &step, &logprob_k, &page_table_writes})
    t->data = static_cast<char*>(inputs_dev_) + reinterpret_cast<size_t>(t->data);
  std::fill_n(host<int32_t>(logprob_k), S, -1);  // no row asks for logprobs
  backend_.copy_h2d(inputs_dev_, inputs_host_, inputs_bytes_);
  residual = make(a, {T, c.hidden_size});
  normed = make(a, {T, c.hidden_size});
  qkv = make(a, {T, c.q_size() + 2 * c.kv_size()});
  attn_out = make(a, {T, c.q_size()});
  const int64_t inter = mlp_buffer_width(c);  // dense layers and Qwen2-MoE's shared expert
  gate_up = make(a, {T, 2 * inter});
  act = make(a, {T, inter});
  if (c.moe.enabled()) {
    moe.router_logits = make(a, {T, c.moe.n_experts});
    moe.topk_ids = make(DType::i32, {T, c.moe.n_experts_per_tok});
    moe.topk_weights = make(DType::f32, {T, c.moe.n_experts_per_tok});
    moe.expert_act = make(a, {T * c.moe.n_experts_per_tok, c.moe.expert_intermediate_size});
    moe.expert_out = make(a, {T * c.moe.n_experts_per_tok, c.hidden_size});
    moe.expert_index = make(DType::i32, {2 * c.moe.n_experts + 2 + T * c.moe.n_experts_per_tok});
    if (c.moe.has_shared_expert()) {
      moe.shared_gate = make(a, {T, 1});
      moe.shared_out = make(a, {T, c.hidden_size});
    }
  }
  last_hidden = make(a, {S, c.hidden_size});
  logits = make(DType::f32, {S, c.vocab_size});
  if (c.tp.active()) {  // the vocabulary-parallel head's slice and the gather's scratch
    logits_shard = make(DType::f32, {S, c.tp.vocab_local});
    logits_gather = make(DType::f32, {int64_t(c.tp.size) * S * c.tp.vocab_local});
  }
  {
    // The outputs block: sampled first, so that a step without logprobs copies S ids only.
    const int64_t K = kMaxTopLogprobs;
    outputs_bytes_ = size_t(S) * 4 * (2 + 2 * K);
    char* out = static_cast<char*>(backend_.alloc(outputs_bytes_));
    allocations_.push_back(out);
    bytes += outputs_bytes_;
    sampled = Tensor(out, DType::i32, backend_.device(), {S});
    lp_sampled = Tensor(out + S * 4, DType::f32, backend_.device(), {S});
    lp_top_ids = Tensor(out + S * 8, DType::i32, backend_.device(), {S, K});
    lp_top = Tensor(out + S * 8 + S * K * 4, DType::f32, backend_.device(), {S, K});
    sampled_host = static_cast<int32_t*>(backend_.alloc_host(outputs_bytes_));
    std::memset(sampled_host, 0, outputs_bytes_);
  }
  {
    // The masks block: the row list first, then the mask rows, so one copy of a prefix
    // carries both.
    n_mask_words = int((c.vocab_size + 31) / 32);
    mask_rows_bytes_ = (size_t(S) * 4 + 63) / 64 * 64;
    const size_t mask_bytes = mask_rows_bytes_ + size_t(S) * size_t(n_mask_words) * 4;
    char* m = static_cast<char*>(backend_.alloc(mask_bytes));
    allocations_.push_back(m);
    bytes += mask_bytes;
    mask_rows = Tensor(m, DType::i32, backend_.device(), {S});
    bitmask = Tensor(m + mask_rows_bytes_, DType::i32, backend_.device(), {S, int64_t(n_mask_words)});
    masks_host_ = backend_.alloc_host(mask_bytes);
    std::memset(masks_host_, 0, mask_bytes);
  }
  bias_indptr = make(DType::i32, {S + 1});
  bias_tokens = make(DType::i32, {S * kMaxLogitBias});
  bias_values = make(DType::f32, {S * kMaxLogitBias});
  if (s.logprobs) logprob_logits = make(DType::f32, {S, c.vocab_size});
  pen_indptr = make(DType::i32, {S + 1});
  pen_tokens = make(DType::i32, {P});
  pen_counts = make(DType::i32, {P});
  pen_frequency = make(DType::f32, {S});
  pen_presence = make(DType::f32, {S});
  pen_repetition = make(DType::f32, {S});
  // Defined contents everywhere: padded rows of a graph read these buffers.
  for (Tensor* t : {&sampled, &pen_indptr, &bias_indptr, &lp_top_ids}) backend_.fill(*t, 0.f);
  for (Tensor* t : {&lp_sampled, &lp_top}) backend_.fill(*t, 0.f);
  for (Tensor* t : {&residual, &normed, &qkv, &attn_out, &gate_up, &act, &last_hidden, &logits,
                    &pen_frequency, &pen_presence})
    backend_.fill(*t, 0.f);
  for (Tensor* t : {&moe.router_logits, &moe.topk_weights, &moe.shared_gate, &moe.shared_out, &logits_shard})
    if (t->defined()) backend_.fill(*t, 0.f);
  backend_.fill(pen_repetition, 1.f);
  backend_.synchronize();
}

void StepBuffers::download_outputs(int n_seqs, bool with_logprobs) {
  backend_.copy_d2h(sampled_host, sampled.data, with_logprobs ? outputs_bytes_ : size_t(n_seqs) * 4);
}

void StepBuffers::upload_masks(int n_masked) {
  SEAM_ASSERT(n_masked >= 0 && n_masked <= sizes.max_seqs);
  if (n_masked == 0) return;
  backend_.copy_h2d(mask_rows.data, masks_host_, mask_rows_bytes_ + size_t(n_masked) * size_t(n_mask_words) * 4);
}

StepBuffers::~StepBuffers() {
  for (void* p : allocations_) backend_.release(p);
  backend_.release_host(inputs_host_);
  backend_.release_host(sampled_host);
  backend_.release_host(masks_host_);
}

}  // namespace seam
