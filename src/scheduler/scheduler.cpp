#include "scheduler/scheduler.h"

#include <algorithm>

#include "core/error.h"

namespace seam {

Scheduler::Scheduler(const SchedulerConfig& config, SlotAllocator& slots, RadixCache& cache)
    : config_(config), slots_(slots), cache_(cache) {
  SEAM_CHECK(config.chunked_prefill_size >= 1, "--chunked-prefill-size must be >= 1");
  SEAM_CHECK(config.max_running_requests >= 1, "--max-running-requests must be >= 1");
  for (int r = config.max_running_requests - 1; r >= 0; --r) free_rows_.push_back(r);
}

void Scheduler::add(Request* req) { waiting_.push_back(req); }

void Scheduler::write_page_table(int row, int begin, const int32_t* slots, int n) {
  SEAM_ASSERT(row >= 0 && row < config_.max_running_requests && begin >= 0 && begin + n <= config_.max_context,
              "page-table write row ", row, " [", begin, ", ", begin + n, ")");
  pending_.add_page_table_write(row, begin, slots, n);
}

bool Scheduler::alloc_slots(Request* r, int n) {
  if (slots_.n_free() < n) cache_.evict(n - slots_.n_free());
  const size_t before = r->slots.size();
  if (!slots_.alloc(n, r->slots)) return false;
  write_page_table(r->req_row, int(before), r->slots.data() + before, n);
  return true;
}

void Scheduler::release_kv(Request* r) {
  // Slots [0, n_prefix_shared) are borrowed from the cache; the rest are ours.
  // Positions [0, n_kv) hold computed KV and can be cached; slots past n_kv
  // (allocated for a step that never ran) are simply freed.
  const int n_kv = std::min<int>(r->n_kv, int(r->slots.size()));
  std::vector<int32_t> tokens(static_cast<size_t>(n_kv));
  for (int p = 0; p < n_kv; ++p) tokens[size_t(p)] = r->token_at(p);
  cache_.insert(tokens.data(), n_kv, r->slots.data());
  if (int(r->slots.size()) > n_kv) slots_.free(r->slots.data() + n_kv, r->slots.size() - size_t(n_kv));
  if (r->prefix_node) cache_.unlock(r->prefix_node);
  r->prefix_node = nullptr;
  r->slots.clear();
  r->n_kv = 0;
  r->n_prefix_shared = 0;
  r->decoding = false;
  r->draft_ids.clear();
  if (r->req_row >= 0) free_rows_.push_back(r->req_row);
  r->req_row = -1;
}

void Scheduler::retract(Request* r) {
  release_kv(r);
  running_.erase(std::find(running_.begin(), running_.end(), r));
  r->n_retractions++;
  stats_.retractions++;
  waiting_.push_front(r);  // resumes first; its generated tokens are re-prefilled
}

bool Scheduler::decodes_after_prefill(const Request& r) const {
  // The prefill's last chunk samples output token n_out + 1 from its logits (with
  // max_new_tokens 0 and prompt logprobs it samples one the engine drops). The request
  // decodes afterwards only if the engine does not finish it on length right there:
  // fewer than max_new_tokens outputs and n_total() <= max_context (speculative_commit.cpp,
  // take_token).
  const int n_out_after = int(r.output_ids.size()) + 1;
  return n_out_after < r.params.max_new_tokens && r.n_total() + 1 <= config_.max_context;
}

bool Scheduler::admit(Request* r) {
  SEAM_ASSERT(!free_rows_.empty());
  r->req_row = free_rows_.back();
  free_rows_.pop_back();
  // Borrow the longest cached prefix; at least one token stays pending so the
  // step produces logits.
  RadixNode* node = nullptr;
  std::vector<int32_t> tokens(size_t(r->n_total()));
  for (int p = 0; p < r->n_total(); ++p) tokens[size_t(p)] = r->token_at(p);
  // A request that wants its prompt's logprobs computes every prompt token (nothing
  // borrowed) until its first output token.
  const bool prompt_lp = r->params.prompt_logprobs && r->output_ids.empty();
  const int hit = cache_.match_prefix(tokens.data(), prompt_lp ? 0 : r->n_total() - 1, r->slots, &node);
  cache_.lock(node);
  r->prefix_node = node;
  r->n_prefix_shared = hit;
  r->n_kv = hit;
  if (hit > 0) write_page_table(r->req_row, 0, r->slots.data(), hit);
  // Admit only if the whole remaining prompt fits now (free or evictable), plus the
  // first decode step's slot when the request decodes after this prefill; later decode
  // growth is covered by retraction.
  const int need = r->n_pending() + (decodes_after_prefill(*r) ? 1 : 0);
  if (slots_.n_free() + cache_.n_evictable_tokens() < need) {
    release_kv(r);
    return false;
  }
  stats_.prefix_cache_hit_tokens += uint64_t(hit);
  r->admit_order = admit_counter_++;
  running_.push_back(r);
  stats_.peak_running = std::max(stats_.peak_running, int(running_.size()));
  return true;
}

void Scheduler::take_prefill(int budget, std::vector<ScheduledSeq>& out) {
  // Requests already admitted and still prefilling (a chunked prompt) go first.
  for (Request* r : running_) {
    if (budget <= 0) return;
    if (r->decoding) continue;
    const int n = std::min(r->n_pending(), budget);
    if (!alloc_slots(r, n)) return;
    out.push_back({r, n, n == r->n_pending()});
    budget -= n;
  }
  while (budget > 0 && !waiting_.empty() && int(running_.size()) < config_.max_running_requests) {
    Request* r = waiting_.front();
    if (!admit(r)) return;
    waiting_.pop_front();
    const int n = std::min(r->n_pending(), budget);
    if (!alloc_slots(r, n)) {  // cannot happen after admit's check, but never lose the request
      running_.pop_back();
      release_kv(r);
      waiting_.push_front(r);
      return;
    }
    out.push_back({r, n, n == r->n_pending()});
    budget -= n;
  }
}

bool Scheduler::ensure_decode_slots(std::vector<Request*>& decoding) {
  // One new slot per decoding request and one per draft; drafts go first when KV is short,
  // then the newest requests are retracted until the rest fit.
  auto need_of = [&] {
    int n = 0;
    for (Request* r : decoding) n += 1 + int(r->draft_ids.size());
    return n;
  };
  bool dropped = false;
  while (!decoding.empty()) {
    const int need = need_of();
    if (slots_.n_free() < need) cache_.evict(need - slots_.n_free());
    if (slots_.n_free() >= need) break;
    if (!dropped && need > int(decoding.size())) {
      for (Request* r : decoding) r->draft_ids.clear();
      dropped = true;
      stats_.drafts_dropped_for_kv++;
      continue;
    }
    auto newest = std::max_element(decoding.begin(), decoding.end(),
                                   [](Request* a, Request* b) { return a->admit_order < b->admit_order; });
    Request* victim = *newest;
    decoding.erase(newest);
    retract(victim);
  }
  for (Request* r : decoding) SEAM_ASSERT(alloc_slots(r, 1 + int(r->draft_ids.size())));
  return !decoding.empty();
}

void Scheduler::free_unused_slots(Request* r) {
  SEAM_ASSERT(r->n_kv >= r->n_prefix_shared && r->n_kv <= int(r->slots.size()));
  if (int(r->slots.size()) == r->n_kv) return;
  slots_.free(r->slots.data() + r->n_kv, r->slots.size() - size_t(r->n_kv));
  r->slots.resize(size_t(r->n_kv));
}

ForwardBatch Scheduler::schedule() {
  scheduled_.clear();
  pending_.page_table_writes.clear();
  pending_.page_table_slots.clear();
  ForwardBatch fb;
  std::vector<Request*> decoding;
  int n_decode_tokens = 0;
  for (Request* r : running_) {
    if (!r->decoding) {
      r->draft_ids.clear();
      continue;
    }
    // A verify row's last position must fit the page table (max_context columns).
    const int room = std::max(0, config_.max_context - r->n_kv - 1);
    if (int(r->draft_ids.size()) > room) r->draft_ids.resize(size_t(room));
    n_decode_tokens += 1 + int(r->draft_ids.size());
    decoding.push_back(r);
  }

  int budget = config_.chunked_prefill_size;
  if (config_.enable_mixed_chunk) budget -= n_decode_tokens;
  std::vector<ScheduledSeq> prefill;
  if (budget > 0) take_prefill(budget, prefill);

  if (!prefill.empty() && (!config_.enable_mixed_chunk || decoding.empty())) {
    scheduled_ = std::move(prefill);
    build(fb, ForwardMode::extend, int(scheduled_.size()));
    return fb;
  }
  // Decode rows need one slot each. In a MIXED step the prefill rows already
  // hold theirs; a decoding request that must be retracted goes back to waiting.
  ensure_decode_slots(decoding);
  scheduled_ = std::move(prefill);
  const int n_prefill = int(scheduled_.size());
  for (Request* r : decoding) {
    if (r->draft_ids.empty()) {
      scheduled_.push_back({r, 1, true});
      continue;
    }
    stats_.verify_rows++;
    for (int i = 0; i <= int(r->draft_ids.size()); ++i) scheduled_.push_back({r, 1, true, i});
  }
  if (scheduled_.empty()) {
    fb.mode = ForwardMode::idle;
    return fb;
  }
  build(fb, n_prefill == 0 ? ForwardMode::decode : (decoding.empty() ? ForwardMode::extend : ForwardMode::mixed),
        n_prefill);
  return fb;
}

void Scheduler::build(ForwardBatch& fb, ForwardMode mode, int n_prefill_seqs) {
  fb.mode = mode;
  // A request admitted and released again within this schedule() leaves writes to
  // a row that is free now: harmless, as a row's entries are written before use.
  fb.page_table_writes.swap(pending_.page_table_writes);
  fb.page_table_slots.swap(pending_.page_table_slots);
  fb.n_prefill_seqs = n_prefill_seqs;
  fb.qo_indptr.push_back(0);
  bool any_penalty = false;
  for (const ScheduledSeq& s : scheduled_) any_penalty |= s.sample && s.req->params.frequency_penalty != 0.f;
  for (const ScheduledSeq& s : scheduled_) {
    const SamplingParams& p = s.req->params;
    any_penalty |= s.sample && (p.presence_penalty != 0.f || p.repetition_penalty != 1.f);
  }
  if (any_penalty) fb.penalty_indptr.push_back(0);
  bool any_bias = false;
  for (const ScheduledSeq& s : scheduled_) any_bias |= s.sample && !s.req->params.logit_bias.empty();
  if (any_bias) fb.logit_bias_indptr.push_back(0);
  bool any_verify = false;
  for (const ScheduledSeq& s : scheduled_) any_verify |= s.draft_index >= 0;
  for (const ScheduledSeq& s : scheduled_) {
    Request* r = s.req;
    fb.request_ids.push_back(r->id);
    fb.samples.push_back(s.sample ? 1 : 0);
    if (any_verify) fb.draft_index.push_back(s.draft_index);
    const int n_prompt = int(r->prompt_ids.size());
    // A verify sub-row i feeds one token at position n_kv + i: the pending token (i = 0) or
    // draft i (whose KV is written now and kept only if the draft is accepted).
    const int sub = std::max(0, s.draft_index);
    const int p0 = r->n_kv + sub;
    for (int p = p0; p < p0 + s.n_new; ++p) {
      if (r->params.prompt_logprobs && r->output_ids.empty() && p + 1 < n_prompt) {
        fb.prompt_lp_token.push_back(fb.n_tokens());
        fb.prompt_lp_target.push_back(r->prompt_ids[size_t(p) + 1]);
        fb.prompt_lp_k.push_back(r->params.logprobs);
        fb.prompt_lp_seq.push_back(int32_t(fb.request_ids.size()) - 1);
      }
      fb.input_ids.push_back(sub > 0 ? r->draft_ids[size_t(sub) - 1] : r->token_at(p));
      fb.positions.push_back(p);
      fb.out_cache_loc.push_back(r->slots[size_t(p)]);
    }
    fb.qo_indptr.push_back(fb.qo_indptr.back() + s.n_new);
    fb.seq_lens.push_back(p0 + s.n_new);
    fb.req_rows.push_back(r->req_row);
    SeqSampling ss;
    ss.temperature = r->params.temperature;
    ss.top_k = r->params.top_k;
    ss.top_p = r->params.top_p;
    ss.min_p = r->params.min_p;
    ss.seed = r->seed;
    // Sub-row i samples the token after draft i: output index size + i, drawn as a plain
    // decode step at that index would draw it (sampling_rng.h), so an accepted run of
    // drafts samples exactly what non-speculative decoding samples.
    ss.step = int32_t(r->output_ids.size()) + sub;
    ss.frequency_penalty = r->params.frequency_penalty;
    ss.presence_penalty = r->params.presence_penalty;
    ss.repetition_penalty = r->params.repetition_penalty;
    ss.logprobs = s.sample ? r->params.logprobs : -1;  // a mid-prompt chunk samples nothing
    fb.sampling.push_back(ss);
    if (any_bias) {
      if (s.sample)
        for (const auto& [id, bias] : r->params.logit_bias) {
          fb.logit_bias_tokens.push_back(id);
          fb.logit_bias_values.push_back(bias);
        }
      fb.logit_bias_indptr.push_back(int32_t(fb.logit_bias_tokens.size()));
    }
    if (any_penalty) {
      if (s.sample && ss.uses_penalties()) {
        // Token -> occurrences in the output (0 when only in the prompt).
        std::vector<std::pair<int32_t, int32_t>> seen;
        for (int32_t t : r->prompt_ids) seen.push_back({t, 0});
        for (int32_t t : r->output_ids) seen.push_back({t, 1});
        std::sort(seen.begin(), seen.end());
        for (size_t i = 0; i < seen.size();) {
          size_t j = i;
          int32_t count = 0;
          while (j < seen.size() && seen[j].first == seen[i].first) count += seen[j++].second;
          fb.penalty_tokens.push_back(seen[i].first);
          fb.penalty_counts.push_back(count);
          i = j;
        }
      }
      fb.penalty_indptr.push_back(int32_t(fb.penalty_tokens.size()));
    }
  }
  if (fb.n_tokens() > config_.chunked_prefill_size && mode != ForwardMode::decode) stats_.budget_violations++;
  if (mode == ForwardMode::extend) stats_.steps_extend++;
  if (mode == ForwardMode::decode) stats_.steps_decode++;
  if (mode == ForwardMode::mixed) stats_.steps_mixed++;
  stats_.prefill_tokens += uint64_t(fb.n_prefill_tokens());
}

void Scheduler::finish(Request* req) {
  auto it = std::find(running_.begin(), running_.end(), req);
  if (it != running_.end()) {
    running_.erase(it);
    release_kv(req);
  }
}

bool Scheduler::abort(Request* req) {
  auto w = std::find(waiting_.begin(), waiting_.end(), req);
  if (w != waiting_.end()) {
    waiting_.erase(w);
    return true;
  }
  auto it = std::find(running_.begin(), running_.end(), req);
  if (it == running_.end()) return false;
  running_.erase(it);
  release_kv(req);
  return true;
}

}  // namespace seam
