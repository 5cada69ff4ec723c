#include "engine/standalone_proposer.h"

#include <algorithm>

#include "core/error.h"
#include "kv/kv_pool.h"
#include "model/checkpoint.h"
#include "model/llama_model.h"
#include "model/model_config.h"
#include "model/model_registry.h"
#include "runtime/model_runner.h"

namespace seam {

StandaloneProposer::StandaloneProposer(Backend& backend, const std::string& model_path, DType dtype,
                                       int target_vocab, const StandaloneShape& shape, const GraphConfig& graphs)
    : shape_(shape), slots_(shape.n_slots) {
  const ModelConfig config = load_model_config(model_path);
  // Drafts are target token ids: the vocabularies must be one.
  SEAM_CHECK(config.vocab_size == target_vocab, "--speculative-draft-model-path: the draft model's vocabulary (",
             config.vocab_size, ") differs from the target's (", target_vocab, ")");
  {
    auto checkpoint = Checkpoint::open(model_path, config);
    model_ = create_model(backend, config, *checkpoint, dtype);
  }
  KvPoolShape kv;
  kv.n_layers = config.n_layers;
  kv.n_kv_heads = config.n_kv_heads;
  kv.head_dim = config.head_dim;
  kv.n_slots = shape.n_slots;
  kv.max_reqs = shape.max_reqs;
  kv.max_context = shape.max_context;
  kv.dtype = dtype;
  kv_ = std::make_unique<KvPool>(backend, kv);
  StepBufferSizes sizes;
  sizes.max_tokens = std::max(shape.chunk_tokens, shape.max_rows);
  sizes.max_seqs = shape.max_rows;
  sizes.max_penalty_entries = 1;  // the draft decodes greedily: no penalties
  sizes.logprobs = false;         // and reports no logprobs
  runner_ = std::make_unique<ModelRunner>(backend, *model_, *kv_, sizes, graphs);
  runner_->capture_graphs();
}

StandaloneProposer::~StandaloneProposer() = default;

void StandaloneProposer::drop(DraftSeq& d) {
  if (!d.slots.empty()) slots_.free(d.slots);
  d.slots.clear();
  d.tokens.clear();
}

void StandaloneProposer::release(uint64_t request_id) {
  auto it = seqs_.find(request_id);
  if (it == seqs_.end()) return;
  drop(it->second);
  seqs_.erase(it);
}

void StandaloneProposer::step(ForwardBatch& fb, std::vector<int32_t>& sampled) {
  bool all_single = true;
  for (int s = 0; s < fb.n_seqs(); ++s) all_single &= fb.qo_indptr[size_t(s) + 1] - fb.qo_indptr[size_t(s)] == 1;
  fb.mode = all_single ? ForwardMode::decode : ForwardMode::extend;
  fb.n_prefill_seqs = all_single ? 0 : fb.n_seqs();
  runner_->forward(fb, sampled);
}

namespace {
// One row of a draft batch: t tokens at positions p0 .. p0 + t - 1 of the request.
void add_row(ForwardBatch& fb, uint64_t id, int row, const std::vector<int32_t>& slots, int p0, const int32_t* tokens,
             int t) {
  if (fb.qo_indptr.empty()) fb.qo_indptr.push_back(0);
  fb.request_ids.push_back(id);
  fb.samples.push_back(1);
  for (int k = 0; k < t; ++k) {
    fb.input_ids.push_back(tokens[k]);
    fb.positions.push_back(p0 + k);
    fb.out_cache_loc.push_back(slots[size_t(p0 + k)]);
  }
  fb.qo_indptr.push_back(fb.qo_indptr.back() + t);
  fb.seq_lens.push_back(p0 + t);
  fb.req_rows.push_back(row);
  fb.sampling.push_back(SeqSampling{});  // temperature 0: greedy
}
}  // namespace

void StandaloneProposer::propose(const std::vector<Request*>& reqs, const std::vector<int>& max_drafts) {
  struct Active {
    Request* r;
    DraftSeq* d;
    int n;    // the request's sequence length
    int m;    // drafts wanted
    int fed;  // next position to feed
  };
  std::vector<Active> act;
  ForwardBatch writes;  // page-table entries of this proposal's allocations, sent with its first step
  std::vector<int32_t> seq;
  for (size_t i = 0; i < reqs.size(); ++i) {
    Request* r = reqs[i];
    r->draft_ids.clear();
    DraftSeq& d = seqs_[r->id];
    // admit_order changes with every admission: a retracted and re-admitted request may hold
    // another row, and its old row may have been written by others meanwhile.
    if (d.row != r->req_row || d.admit_order != r->admit_order) drop(d);
    d.row = r->req_row;
    d.admit_order = r->admit_order;
    const int n = r->n_total();
    const int m = std::min(max_drafts[i], shape_.max_context - n + 1);
    if (m <= 0) continue;
    // Keep the draft KV that still matches the sequence (the target rejected the rest).
    int keep = 0;
    const int lim = std::min<int>(int(d.tokens.size()), n - 1);
    while (keep < lim && d.tokens[size_t(keep)] == r->token_at(keep)) ++keep;
    if (int(d.slots.size()) > keep) slots_.free(d.slots.data() + keep, d.slots.size() - size_t(keep));
    d.slots.resize(size_t(keep));
    d.tokens.resize(size_t(keep));
    // Slots for positions keep .. n - 1 (catch-up) and n .. n + m - 2 (drafts 1 .. m - 1; the
    // last draft is never fed).
    const int need = n + m - 1 - keep;
    if (!slots_.alloc(need, d.slots)) continue;  // the draft pool is full: no drafts this time
    writes.add_page_table_write(d.row, keep, d.slots.data() + keep, need);
    act.push_back({r, &d, n, m, keep});
  }
  if (act.empty()) return;
  std::vector<std::vector<int32_t>> drafts(act.size());
  std::vector<int32_t> sampled;
  std::vector<size_t> row_of;
  bool first = true;
  // Catch-up: feed each request's sequence up to its last token, chunk_tokens per step; the
  // step that feeds the last token samples draft 1.
  for (;;) {
    ForwardBatch fb;
    if (first) fb.page_table_writes.swap(writes.page_table_writes), fb.page_table_slots.swap(writes.page_table_slots);
    first = false;
    row_of.clear();
    int budget = shape_.chunk_tokens;
    for (size_t a = 0; a < act.size() && budget > 0; ++a) {
      Active& x = act[a];
      if (x.fed >= x.n) continue;
      const int t = std::min(x.n - x.fed, budget);
      seq.resize(size_t(t));
      for (int k = 0; k < t; ++k) seq[size_t(k)] = x.r->token_at(x.fed + k);
      add_row(fb, x.r->id, x.d->row, x.d->slots, x.fed, seq.data(), t);
      x.d->tokens.insert(x.d->tokens.end(), seq.begin(), seq.end());
      x.fed += t;
      budget -= t;
      row_of.push_back(a);
    }
    if (row_of.empty()) break;
    step(fb, sampled);
    for (size_t s = 0; s < row_of.size(); ++s)
      if (act[row_of[s]].fed == act[row_of[s]].n) drafts[row_of[s]].push_back(sampled[s]);
  }
  // Decode: draft j is fed at position n - 1 + j and samples draft j + 1.
  int max_m = 0;
  for (const Active& x : act) max_m = std::max(max_m, x.m);
  for (int j = 1; j < max_m; ++j) {
    ForwardBatch fb;
    row_of.clear();
    for (size_t a = 0; a < act.size(); ++a) {
      Active& x = act[a];
      if (x.m <= j) continue;
      const int32_t tok = drafts[a][size_t(j) - 1];
      add_row(fb, x.r->id, x.d->row, x.d->slots, x.n - 1 + j, &tok, 1);
      x.d->tokens.push_back(tok);
      row_of.push_back(a);
    }
    if (row_of.empty()) break;
    step(fb, sampled);
    for (size_t s = 0; s < row_of.size(); ++s) drafts[row_of[s]].push_back(sampled[s]);
  }
  for (size_t a = 0; a < act.size(); ++a) {
    Active& x = act[a];
    // Every allocated slot holds a fed token's KV (the last draft never gets one).
    SEAM_ASSERT(int(x.d->slots.size()) == int(x.d->tokens.size()), "draft KV bookkeeping");
    x.r->draft_ids = std::move(drafts[a]);
  }
}

}  // namespace seam
