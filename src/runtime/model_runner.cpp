#include "runtime/model_runner.h"

#include <algorithm>
#include <cstdio>

#include "graph/decode_graph_runner.h"
#include "graph/piecewise_graph_runner.h"
#include "kv/slot_allocator.h"

namespace seam {

namespace {
// The logprob op's arguments over the first n rows of the fixed step buffers (sampled ids in,
// the sampled id's logprob and the top-k out): one place for the step's sampling and the
// prompt-logprob passes.
LogprobBatch logprob_batch(StepBuffers& b, int n) {
  LogprobBatch lp;
  lp.n = n;
  lp.k = b.logprob_k.rows(n);
  lp.sampled = b.sampled.rows(n);
  lp.out_sampled = b.lp_sampled.rows(n);
  lp.out_top_ids = b.lp_top_ids.rows(n);
  lp.out_top = b.lp_top.rows(n);
  return lp;
}

int n_page_table_entries(const ForwardBatch& fb) { return int(fb.page_table_slots.size()); }
}  // namespace

ModelRunner::ModelRunner(Backend& backend, LlamaModel& model, KvPool& kv, const StepBufferSizes& sizes,
                         const GraphConfig& graphs)
    : backend_(backend), model_(model), kv_(kv), graph_config_(graphs) {
  StepBufferSizes s = sizes;
  // Graph buckets may pad past the scheduler's limits: size the buffers for the largest key.
  for (int b : graphs.decode_buckets) s.max_seqs = std::max(s.max_seqs, b), s.max_tokens = std::max(s.max_tokens, b);
  for (int b : graphs.piecewise_buckets) s.max_tokens = std::max(s.max_tokens, b);
  buf_ = std::make_unique<StepBuffers>(backend, model.config(), model.dtype(), s);
  for (int l = 0; l < kv.shape().n_layers; ++l) {
    kv_view_.k.push_back(kv.k_cache(l));
    kv_view_.v.push_back(kv.v_cache(l));
  }
  const size_t S = size_t(s.max_seqs);
  for (auto* v : {&h_freq_, &h_pres_, &h_rep_}) v->resize(S);
}

ModelRunner::~ModelRunner() = default;

void ModelRunner::capture_graphs() {
  SEAM_ASSERT(!sealed_, "capture_graphs called twice");
  // The runners get their work as closures over this runner's buffers, model and KV view;
  // they never see the ModelRunner (graph/ sits below runtime/).
  auto pad = [this](int n_tokens, int n_seqs) { upload(ForwardBatch{}, n_tokens, n_seqs); };
  if (!graph_config_.disable_cuda_graph && !graph_config_.decode_buckets.empty()) {
    DecodeGraphWork work;
    work.pad = pad;
    work.forward = [this](int bs) {
      run_layers_eager(bs, attention_batch(bs, bs, 0, 0, /*max_seq_len unknown*/ 0));
      model_.run_logits(*buf_, bs);
    };
    decode_graphs_ = std::make_unique<DecodeGraphRunner>(backend_, graph_config_.decode_buckets, std::move(work));
    decode_graphs_->capture_all();
    const GraphCacheStats& g = decode_graphs_->stats();
    stats_.captured_decode_keys = g.captured_keys;
    stats_.decode_capture_s = g.capture_s;
    stats_.decode_graph_bytes = g.graph_bytes;
  }
  if (!graph_config_.disable_cuda_graph && !graph_config_.disable_piecewise_cuda_graph &&
      !graph_config_.piecewise_buckets.empty()) {
    PiecewiseGraphWork work;
    work.n_pieces = model_.n_pieces();
    work.pad = pad;
    work.run_piece = [this](int i, int n) { model_.run_piece(i, *buf_, kv_view_, n); };
    work.run_attention = [this](int layer, const AttentionBatch& a) {
      model_.run_attention(layer, *buf_, kv_view_, a);
    };
    piecewise_graphs_ =
        std::make_unique<PiecewiseGraphRunner>(backend_, graph_config_.piecewise_buckets, std::move(work));
    piecewise_graphs_->capture_all();
    const GraphCacheStats& g = piecewise_graphs_->stats();
    stats_.captured_piecewise_keys = g.captured_keys;
    stats_.piecewise_capture_s = g.capture_s;
    stats_.piecewise_graph_bytes = g.graph_bytes;
  }
  sealed_ = true;
  if (decode_graphs_) decode_graphs_->seal();
  if (piecewise_graphs_) piecewise_graphs_->seal();
  backend_.end_startup();  // start-up-only work (GEMM tuning) stops with the seal
}

const GraphStats& ModelRunner::graph_stats() const {
  stats_.captures_after_seal = (decode_graphs_ ? decode_graphs_->stats().captures_after_seal : 0) +
                               (piecewise_graphs_ ? piecewise_graphs_->stats().captures_after_seal : 0);
  return stats_;
}

void ModelRunner::upload(const ForwardBatch& fb, int T, int S) {
  stage_inputs(fb, T, S);
  copy_inputs(fb);
}

void ModelRunner::stage_inputs(const ForwardBatch& fb, int T, int S) {
  const int n = fb.n_tokens(), n_seqs = fb.n_seqs();
  StepBuffers& b = *buf_;
  SEAM_ASSERT(n <= T && n_seqs <= S && T <= b.sizes.max_tokens && S <= b.sizes.max_seqs,
              "batch of ", n, " tokens / ", n_seqs, " seqs does not fit buffers padded to ", T, "/", S);
  int32_t* ids = b.host<int32_t>(b.input_ids);
  int32_t* pos = b.host<int32_t>(b.positions);
  int32_t* loc = b.host<int32_t>(b.out_cache_loc);
  // Padding contract: padded tokens are id 0 at position 0 writing the scratch
  // slot; padded sequences are one such token reading the scratch row.
  std::copy(fb.input_ids.begin(), fb.input_ids.end(), ids);
  std::copy(fb.positions.begin(), fb.positions.end(), pos);
  std::copy(fb.out_cache_loc.begin(), fb.out_cache_loc.end(), loc);
  std::fill(ids + n, ids + T, 0);
  std::fill(pos + n, pos + T, 0);
  std::fill(loc + n, loc + T, SlotAllocator::kScratchSlot);
  int32_t* indptr = b.host<int32_t>(b.qo_indptr);
  int32_t* lens = b.host<int32_t>(b.seq_lens);
  int32_t* rows = b.host<int32_t>(b.req_rows);
  int32_t* last = b.host<int32_t>(b.last_idx);
  float* temp = b.host<float>(b.temperature);
  int32_t* topk = b.host<int32_t>(b.top_k);
  float* topp = b.host<float>(b.top_p);
  float* minp = b.host<float>(b.min_p);
  int64_t* seed = b.host<int64_t>(b.seed);
  int32_t* step = b.host<int32_t>(b.step);
  int32_t* lpk = b.host<int32_t>(b.logprob_k);
  indptr[0] = 0;
  for (int s = 0; s < S; ++s) {
    const bool real = s < n_seqs;
    indptr[s + 1] = real ? fb.qo_indptr[size_t(s) + 1] : std::min(T, indptr[s] + 1);
    lens[s] = real ? fb.seq_lens[size_t(s)] : 1;
    rows[s] = real ? fb.req_rows[size_t(s)] : kv_.scratch_row();
    last[s] = real ? fb.qo_indptr[size_t(s) + 1] - 1 : std::min(T - 1, n + (s - n_seqs));
    const SeqSampling ss = real ? fb.sampling[size_t(s)] : SeqSampling{};
    temp[s] = ss.temperature;
    topk[s] = ss.top_k;
    topp[s] = ss.top_p;
    minp[s] = ss.min_p;
    seed[s] = int64_t(ss.seed);
    step[s] = ss.step;
    lpk[s] = ss.logprobs;
    h_freq_[size_t(s)] = ss.frequency_penalty;
    h_pres_[size_t(s)] = ss.presence_penalty;
    h_rep_[size_t(s)] = ss.repetition_penalty;
  }
  // Page-table writes as (flat index, slot) pairs, as many as the buffer holds.
  const int n_pairs = std::min(n_page_table_entries(fb), b.max_page_table_writes());
  const int64_t n_cols = kv_.shape().max_context;
  int32_t* pairs = b.host<int32_t>(b.page_table_writes);
  int k = 0;
  for (const PageTableWrite& w : fb.page_table_writes) {
    SEAM_ASSERT(w.row >= 0 && w.row < kv_.shape().max_reqs && w.begin >= 0 && w.begin + w.n <= n_cols,
                "page-table write row ", w.row, " [", w.begin, ", ", w.begin + w.n, ")");
    for (int j = 0; j < w.n && k < n_pairs; ++j, ++k) {
      pairs[2 * k] = int32_t(int64_t(w.row) * n_cols + w.begin + j);
      pairs[2 * k + 1] = fb.page_table_slots[size_t(w.offset + j)];
    }
  }
}

void ModelRunner::copy_inputs(const ForwardBatch& fb) {
  StepBuffers& b = *buf_;
  const int n_seqs = fb.n_seqs();
  // The scheduler's page-table writes ride in the step's one input copy as
  // (index, slot) pairs (stage_inputs) and are scattered into the fixed page
  // table before any of the step's kernels (attention reads it). Pairs past the
  // buffer (a step admitting long prefix-cache hits) are copied directly first.
  const int n_pairs = std::min(n_page_table_entries(fb), b.max_page_table_writes());
  int k = 0;
  for (const PageTableWrite& w : fb.page_table_writes) {
    const int skip = std::clamp(n_pairs - k, 0, w.n);
    if (skip < w.n) kv_.set_slots(w.row, w.begin + skip, fb.page_table_slots.data() + w.offset + skip, w.n - skip);
    k += w.n;
  }
  b.upload_inputs(n_pairs);  // one copy for every per-step input
  if (n_pairs > 0) backend_.scatter_i32(kv_.page_table(), b.page_table_writes.rows(n_pairs));
  if (!fb.penalty_indptr.empty()) {
    SEAM_CHECK(fb.penalty_tokens.size() <= size_t(b.pen_tokens.size(0)), "penalty entries (",
               fb.penalty_tokens.size(), ") exceed the buffer of ", b.pen_tokens.size(0));
    backend_.copy_h2d(b.pen_indptr.data, fb.penalty_indptr.data(), fb.penalty_indptr.size() * 4);
    backend_.copy_h2d(b.pen_tokens.data, fb.penalty_tokens.data(), fb.penalty_tokens.size() * 4);
    backend_.copy_h2d(b.pen_counts.data, fb.penalty_counts.data(), fb.penalty_counts.size() * 4);
    backend_.copy_h2d(b.pen_frequency.data, h_freq_.data(), size_t(n_seqs) * 4);
    backend_.copy_h2d(b.pen_presence.data, h_pres_.data(), size_t(n_seqs) * 4);
    backend_.copy_h2d(b.pen_repetition.data, h_rep_.data(), size_t(n_seqs) * 4);
  }
  if (!fb.logit_bias_indptr.empty()) {
    SEAM_CHECK(fb.logit_bias_tokens.size() <= size_t(b.bias_tokens.size(0)), "logit_bias entries (",
               fb.logit_bias_tokens.size(), ") exceed the buffer of ", b.bias_tokens.size(0));
    backend_.copy_h2d(b.bias_indptr.data, fb.logit_bias_indptr.data(), fb.logit_bias_indptr.size() * 4);
    backend_.copy_h2d(b.bias_tokens.data, fb.logit_bias_tokens.data(), fb.logit_bias_tokens.size() * 4);
    backend_.copy_h2d(b.bias_values.data, fb.logit_bias_values.data(), fb.logit_bias_values.size() * 4);
  }
}

namespace {
bool any_logprobs(const ForwardBatch& fb) {
  for (const SeqSampling& s : fb.sampling)
    if (s.logprobs >= 0) return true;
  return false;
}
}  // namespace

AttentionBatch ModelRunner::attention_batch(int n_tokens, int n_seqs, int n_prefill_seqs, int n_prefill_tokens,
                                            int max_seq_len) const {
  AttentionBatch a;
  a.n_tokens = n_tokens;
  a.n_seqs = n_seqs;
  a.n_prefill_seqs = n_prefill_seqs;
  a.n_prefill_tokens = n_prefill_tokens;
  a.max_seq_len = max_seq_len;
  a.qo_indptr = buf_->qo_indptr.rows(n_seqs + 1);
  a.seq_lens = buf_->seq_lens.rows(n_seqs);
  a.req_rows = buf_->req_rows.rows(n_seqs);
  a.page_table = kv_.page_table();
  return a;
}

void ModelRunner::run_layers_eager(int n, const AttentionBatch& attn) {
  for (int i = 0; i < model_.n_pieces(); ++i) {
    model_.run_piece(i, *buf_, kv_view_, n);
    if (i < model_.config().n_layers) model_.run_attention(i, *buf_, kv_view_, attn);
  }
}

void ModelRunner::build_masks(const ForwardBatch& fb) {
  StepBuffers& b = *buf_;
  const int n_masked = int(fb.mask_rows.size());
  SEAM_ASSERT(fb.fill_mask, "a batch with constrained rows carries fill_mask");
  // The forward is enqueued (async on CUDA): the host builds the masks while the device
  // computes the logits. The mark tells when the device got there first: from the first
  // poll that finds the forward done, the mask work is on the critical path.
  backend_.mark_forward();
  const Clock::time_point t0 = Clock::now();
  Clock::time_point t_done{};
  bool done = false;
  int32_t* rows = b.mask_rows_host();
  const int n_words = b.n_mask_words;
  for (int i = 0; i < n_masked; ++i) {
    if (!done && backend_.forward_done()) done = true, t_done = Clock::now();
    const int row = fb.mask_rows[size_t(i)];
    SEAM_ASSERT(row >= 0 && row < fb.n_seqs() && (i == 0 || row > fb.mask_rows[size_t(i) - 1]),
                "mask rows must be ascending sequence indices");
    rows[i] = row;
    fb.fill_mask(row, b.bitmask_host(i), n_words);  // writes each of the row's words once
  }
  if (!done && backend_.forward_done()) done = true, t_done = Clock::now();
  const Clock::time_point t1 = Clock::now();
  timing_.mask_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  timing_.mask_exposed_ms = done ? std::chrono::duration<double, std::milli>(t1 - t_done).count() : 0.0;
  timing_.n_masked_rows = n_masked;
  b.upload_masks(n_masked);
}

void ModelRunner::sample(const ForwardBatch& fb, std::vector<int32_t>& sampled) {
  const int S = fb.n_seqs();
  StepBuffers& b = *buf_;
  const int n_masked = int(fb.mask_rows.size());
  if (n_masked > 0) build_masks(fb);
  // Sampling runs outside every graph (after the decode graph's logits or the piecewise
  // pieces), so the host may decide per step whether logprobs run at all; rows that ask
  // for none are skipped inside the kernel by their k = -1 in the fixed logprob_k buffer.
  const bool with_logprobs = any_logprobs(fb);
  SEAM_ASSERT(!with_logprobs || b.logprob_logits.defined(),
              "a row asks for logprobs of a runner sized without them (the engine refuses such requests)");
  const int64_t vocab = b.logits.size(1);
  // Logprobs are of the raw distribution: keep the logits before logit_bias, penalties
  // and the sampler (which overwrites a row with its probabilities on CUDA) touch them.
  if (with_logprobs) backend_.copy_d2d(b.logprob_logits.data, b.logits.data, size_t(S) * size_t(vocab) * 4);
  if (!fb.logit_bias_indptr.empty()) {
    LogitBiasBatch lb;
    lb.n = S;
    lb.nnz = int(fb.logit_bias_tokens.size());
    lb.indptr = b.bias_indptr.rows(S + 1);
    lb.tokens = b.bias_tokens;
    lb.values = b.bias_values;
    backend_.apply_logit_bias(b.logits.rows(S), lb);
  }
  if (!fb.penalty_indptr.empty()) {
    PenaltyBatch p;
    p.n = S;
    p.nnz = int(fb.penalty_tokens.size());
    p.indptr = b.pen_indptr.rows(S + 1);
    p.tokens = b.pen_tokens;
    p.out_counts = b.pen_counts;
    p.frequency = b.pen_frequency.rows(S);
    p.presence = b.pen_presence.rows(S);
    p.repetition = b.pen_repetition.rows(S);
    backend_.apply_penalties(b.logits.rows(S), p);
  }
  // Structured output, after logit_bias and penalties so that neither can revive a
  // forbidden token; the logprobs copy above keeps the raw distribution.
  if (n_masked > 0)
    backend_.apply_token_bitmask(b.logits.rows(S), b.bitmask.rows(n_masked), b.mask_rows.rows(n_masked));
  SamplingBatch s;
  s.n = S;
  s.temperature = b.temperature.rows(S);
  s.top_k = b.top_k.rows(S);
  s.top_p = b.top_p.rows(S);
  s.min_p = b.min_p.rows(S);
  s.seed = b.seed.rows(S);
  s.step = b.step.rows(S);
  backend_.sample(b.sampled.rows(S), b.logits.rows(S), s);
  if (with_logprobs) {
    backend_.logprobs(b.logprob_logits.rows(S), logprob_batch(b, S));
  }
  b.download_outputs(S, with_logprobs);  // pinned: returns at once
  backend_.timer_end();
  timing_.launch_ms = lap_ms();
  if (fb.while_device_runs) {  // the device runs the step meanwhile (CUDA; the CPU backend has finished it)
    fb.while_device_runs();
    timing_.while_device_runs_ms = lap_ms();
  }
  backend_.synchronize();
  timing_.gpu_ms = backend_.timer_elapsed_ms();  // the stream is idle: reading the marks never waits
  sampled.assign(b.sampled_host, b.sampled_host + S);
  timing_.wait_ms = lap_ms();
}

double ModelRunner::lap_ms() {
  const Clock::time_point now = Clock::now();
  const double ms = std::chrono::duration<double, std::milli>(now - lap_).count();
  lap_ = now;
  return ms;
}

void ModelRunner::start_step(const ForwardBatch& fb, int T, int S) {
  stage_inputs(fb, T, S);
  // The stream is idle here (the last step ended in synchronize), so the first mark
  // fires when the input copy is issued: the span covers the whole step on the device.
  backend_.timer_begin();
  copy_inputs(fb);
  timing_.prepare_ms = lap_ms();
}

void ModelRunner::note_eager(const std::string& reason, StepReport* report) {
  stats_.eager_steps++;
  stats_.eager_by_reason[reason]++;
  if (report) {
    report->path = StepPath::eager;
    report->eager_reason = reason;
  }
}

void ModelRunner::forward_eager(const ForwardBatch& fb, std::vector<int32_t>& sampled) {
  timing_ = StepTiming{};
  lap_ = Clock::now();
  run_eager(fb, sampled);
}

void ModelRunner::run_eager(const ForwardBatch& fb, std::vector<int32_t>& sampled) {
  const int n = fb.n_tokens(), S = fb.n_seqs();
  start_step(fb, n, S);
  run_layers_eager(n, attention_batch(n, S, fb.n_prefill_seqs, fb.n_prefill_tokens(), fb.max_seq_len()));
  model_.run_logits(*buf_, S);
  sample(fb, sampled);
}

void ModelRunner::forward(const ForwardBatch& fb, std::vector<int32_t>& sampled, StepReport* report) {
  SEAM_ASSERT(fb.mode != ForwardMode::idle && fb.n_tokens() > 0);
  timing_ = StepTiming{};
  lap_ = Clock::now();
  if (report) *report = StepReport{};
  const int n = fb.n_tokens(), S = fb.n_seqs();
  std::string reason;
  if (fb.mode == ForwardMode::decode) {
    const int bs = decode_graphs_ ? decode_graphs_->bucket_for(S) : 0;
    if (bs > 0) {
      start_step(fb, bs, bs);
      decode_graphs_->replay(bs);
      stats_.decode_graph_replays++;
      stats_.padding_tokens += uint64_t(bs - S);
      if (report) *report = StepReport{StepPath::decode_graph, bs, bs - S, ""};
      if (fb.has_verify_rows()) stats_.verify_steps_decode_graph++;
      sample(fb, sampled);
      return;
    }
    // A verify batch's key is its row count (sub-rows included): say so when it misses.
    reason = graph_config_.disable_cuda_graph ? "disabled"
             : fb.has_verify_rows()           ? "verify batch too large"
                                              : "batch too large";
  } else {
    const int T = piecewise_graphs_ ? piecewise_graphs_->bucket_for(n) : 0;
    if (T > 0) {
      start_step(fb, T, S);
      piecewise_graphs_->replay(T, attention_batch(n, S, fb.n_prefill_seqs, fb.n_prefill_tokens(),
                                                   fb.max_seq_len()));
      model_.run_logits(*buf_, S);
      stats_.piecewise_replays++;
      (fb.mode == ForwardMode::mixed ? stats_.piecewise_replays_mixed : stats_.piecewise_replays_extend)++;
      stats_.padding_tokens += uint64_t(T - n);
      if (report) *report = StepReport{StepPath::piecewise_graph, T, T - n, ""};
      if (fb.has_verify_rows()) stats_.verify_steps_piecewise++;
      sample(fb, sampled);
      return;
    }
    reason = graph_config_.disable_cuda_graph || graph_config_.disable_piecewise_cuda_graph ? "disabled"
                                                                                           : "too many tokens";
  }
  note_eager(reason, report);
  if (fb.has_verify_rows()) stats_.verify_steps_eager++;
  run_eager(fb, sampled);
}

StepResult ModelRunner::forward(const ForwardBatch& fb, StepReport* report) {
  std::vector<int32_t> sampled;
  forward(fb, sampled, report);
  const int S = fb.n_seqs();
  SEAM_ASSERT(int(fb.request_ids.size()) == S && int(fb.samples.size()) == S,
              "a batch for forward() carries a request id and a sample flag per sequence");
  StepResult r;
  r.seqs.resize(size_t(S));
  for (int s = 0; s < S; ++s) {
    SeqResult& q = r.seqs[size_t(s)];
    q.request_id = fb.request_ids[size_t(s)];
    q.n_new = fb.qo_indptr[size_t(s) + 1] - fb.qo_indptr[size_t(s)];
    q.sample = fb.samples[size_t(s)] != 0;
    q.sampled_id = sampled[size_t(s)];
    if (fb.has_verify_rows()) q.draft_index = fb.draft_index[size_t(s)];
    const int k = fb.sampling[size_t(s)].logprobs;
    if (q.sample && k >= 0) {
      const StepBuffers& b = *buf_;
      q.has_logprobs = true;
      q.logprobs.id = q.sampled_id;
      q.logprobs.logprob = b.out_host<float>(b.lp_sampled)[s];
      const int32_t* ids = b.out_host<int32_t>(b.lp_top_ids) + int64_t(s) * kMaxTopLogprobs;
      const float* lps = b.out_host<float>(b.lp_top) + int64_t(s) * kMaxTopLogprobs;
      const int n_top = std::min<int>(k, int(b.logits.size(1)));
      for (int j = 0; j < n_top; ++j) q.logprobs.top.emplace_back(ids[j], lps[j]);
    }
  }
  if (!fb.prompt_lp_token.empty()) prompt_logprobs(fb, r);
  return r;
}

void ModelRunner::prompt_logprobs(const ForwardBatch& fb, StepResult& r) {
  StepBuffers& b = *buf_;
  const int n = int(fb.prompt_lp_token.size());
  const int max_rows = int(b.sizes.max_seqs);
  const int vocab = int(b.logits.size(1));
  // The step is over (its outputs are on the host), so the step inputs last_idx, logprob_k
  // and the output block are free to reuse; the next step stages all of them again.
  for (int begin = 0; begin < n; begin += max_rows) {
    const int m = std::min(max_rows, n - begin);
    int32_t* last = b.host<int32_t>(b.last_idx);
    int32_t* ks = b.host<int32_t>(b.logprob_k);
    std::copy_n(fb.prompt_lp_token.begin() + begin, m, last);
    std::copy_n(fb.prompt_lp_k.begin() + begin, m, ks);
    backend_.copy_h2d(b.last_idx.data, last, size_t(m) * 4);
    backend_.copy_h2d(b.logprob_k.data, ks, size_t(m) * 4);
    backend_.copy_h2d(b.sampled.data, fb.prompt_lp_target.data() + begin, size_t(m) * 4);
    model_.run_logits(b, m);
    backend_.logprobs(b.logits.rows(m), logprob_batch(b, m));
    b.download_outputs(m, true);
    backend_.synchronize();
    for (int i = 0; i < m; ++i) {
      const int j = begin + i;
      SeqResult& q = r.seqs[size_t(fb.prompt_lp_seq[size_t(j)])];
      if (q.prompt_logprobs.empty()) {
        const int t = fb.prompt_lp_token[size_t(j)];
        q.prompt_lp_first = fb.positions[size_t(t)] + 1;
      }
      TokenLogprob t;
      t.id = fb.prompt_lp_target[size_t(j)];
      t.logprob = b.out_host<float>(b.lp_sampled)[i];
      const int32_t* ids = b.out_host<int32_t>(b.lp_top_ids) + int64_t(i) * kMaxTopLogprobs;
      const float* lps = b.out_host<float>(b.lp_top) + int64_t(i) * kMaxTopLogprobs;
      for (int k = 0; k < std::min(fb.prompt_lp_k[size_t(j)], vocab); ++k) t.top.emplace_back(ids[k], lps[k]);
      q.prompt_logprobs.push_back(std::move(t));
    }
  }
}

std::vector<float> ModelRunner::last_logits(int n_seqs) {
  std::vector<float> out(size_t(n_seqs) * size_t(model_.config().vocab_size));
  backend_.copy_d2h(out.data(), buf_->logits.data, out.size() * 4);
  backend_.synchronize();
  return out;
}

}  // namespace seam
