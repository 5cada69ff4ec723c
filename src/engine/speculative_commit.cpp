// The speculative parts of an engine step (EngineCore, engine_core.h): before schedule(),
// which decoding requests draft and the proposer's call (the off-switch included); after the
// forward, the commit of one row's sampled tokens -- a verify row's accepted run, of which a
// plain row is the one-token case: each token goes through take_token (stop ids, grammar,
// detokenizer, stop strings, length) in order, the run stops at the first draft the target
// did not sample or at a cut, the request's KV keeps what was accepted and the rejected
// drafts' slots go back at once (architecture.md "Speculative decoding").
#include <algorithm>
#include <chrono>
#include <string>

#include "engine/draft_proposer.h"
#include "engine/engine_core.h"
#include "grammar/grammar_matcher.h"
#include "runtime/step_result.h"
#include "scheduler/scheduler.h"
#include "tokenizer/incremental_detokenizer.h"

namespace seam {

namespace {
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

bool EngineCore::may_speculate(const Live& l) const {
  const SamplingParams& p = l.req->params;
  // A constrained row's matcher would have to accept drafts only as they are committed, and
  // penalties would have to count the drafts before them: such requests do not speculate.
  return !p.disable_speculative && !l.matcher && p.frequency_penalty == 0.f && p.presence_penalty == 0.f &&
         p.repetition_penalty == 1.f;
}

void EngineCore::propose_drafts() {
  draft_reqs_.clear();
  draft_max_.clear();
  int n_decoding = 0;
  for (Request* r : scheduler_->running()) {
    r->draft_ids.clear();
    n_decoding += r->decoding ? 1 : 0;
  }
  if (n_decoding == 0) return;
  if (n_decoding > spec_.max_batch_size) {  // verification would cost more than it saves
    ++spec_off_steps_;
    return;
  }
  for (Request* r : scheduler_->running()) {
    if (!r->decoding || !may_speculate(live_.at(r->id))) continue;
    // A row emits at most its accepted drafts + 1 tokens: never draft past max_new_tokens.
    const int room = std::min(spec_.n_draft_tokens, r->params.max_new_tokens - int(r->output_ids.size()) - 1);
    if (room <= 0) continue;
    draft_reqs_.push_back(r);
    draft_max_.push_back(room);
  }
  if (!draft_reqs_.empty()) proposer_->propose(draft_reqs_, draft_max_);
}

bool EngineCore::check_stop(Request& r, int32_t token) {
  const SamplingParams& p = r.params;
  const bool is_eos = std::find(model_config_.eos_token_ids.begin(), model_config_.eos_token_ids.end(), token) !=
                      model_config_.eos_token_ids.end();
  if ((is_eos && !p.ignore_eos) ||
      std::find(p.stop_token_ids.begin(), p.stop_token_ids.end(), token) != p.stop_token_ids.end()) {
    r.finish = FinishReason::stop;  // the stop token is not part of the output
    return true;
  }
  return false;
}

bool EngineCore::take_token(Request& r, grammar::GrammarMatcher* m, const SeqResult& q,
                            std::vector<int32_t>& new_ids, std::vector<TokenLogprob>& new_logprobs) {
  const int32_t token = q.sampled_id;
  if (check_stop(r, token)) return true;
  if (m && !m->accept_token(token)) {
    // The mask allowed only what the matcher accepts; a rejected token is a bug, and fails
    // this request alone.
    fail_request(r.id, ErrorKind::internal,
                 detail::concat("structured output: the sampled token ", token,
                                " is not allowed by the request's grammar (internal error)"));
    return false;
  }
  // A stop id the grammar accepted (an EOS under ignore_eos): the grammar has ended, so
  // must the request.
  if (m && m->is_terminated()) r.finish = FinishReason::stop;
  r.output_ids.push_back(token);
  new_ids.push_back(token);
  if (q.has_logprobs) new_logprobs.push_back(q.logprobs);
  const size_t prev_len = r.text.size();
  const auto t_detok = Clock::now();
  r.text += r.detok->feed(token);
  host_detokenize_s_ += seconds_since(t_detok);
  ++n_generated_tokens_;
  // Stop strings: a new match must end inside the new text.
  size_t best = std::string::npos;
  for (const auto& s : r.params.stop) {
    const size_t from = prev_len >= s.size() ? prev_len - s.size() + 1 : 0;
    const size_t pos = r.text.find(s, from);
    if (pos != std::string::npos && pos < best) best = pos, r.matched_stop = s;
  }
  if (best != std::string::npos) {
    r.text.resize(best);
    r.finish = FinishReason::stop;
  }
  if (!r.finished() && (int(r.output_ids.size()) >= r.params.max_new_tokens || r.n_total() > max_context_))
    r.finish = FinishReason::length;
  return true;
}

void EngineCore::commit_row(const StepResult& result, size_t i, std::vector<uint64_t>& done) {
  const SeqResult& q = result.seqs[i];
  Request& r = *rows_[i];
  // The row's sub-rows: one for a plain row, d + 1 for a verify row of d drafts.
  size_t n_sub = 1;
  if (q.draft_index == 0)
    while (i + n_sub < result.seqs.size() && result.seqs[i + n_sub].draft_index == int(n_sub)) ++n_sub;
  SEAM_ASSERT(n_sub == 1 || n_sub == r.draft_ids.size() + 1, "a verify row of ", n_sub,
              " sub-rows for ", r.draft_ids.size(), " drafts");
  std::vector<int32_t> new_ids;
  std::vector<TokenLogprob> new_logprobs;
  int n_accepted = 0;
  for (size_t j = 0; j < n_sub; ++j) {
    const auto now = Clock::now();
    if (r.output_ids.empty()) r.t_first_token = now;
    r.t_last_token = now;
    r.token_times_s.push_back(std::chrono::duration<double>(now - r.t_arrival).count());
    if (r.params.max_new_tokens == 0) {
      // Only the prompt's logprobs were asked for (echo with max_tokens 0): the prefill is
      // done, the sampled token is not part of the answer.
      r.finish = FinishReason::length;
      break;
    }
    if (!take_token(r, row_matchers_[i], result.seqs[i + j], new_ids, new_logprobs)) return;  // failed: gone
    // EOS, a stop string or max_tokens cut the accepted run here; otherwise draft j + 1
    // stands if the target sampled it.
    if (r.finished() || j + 1 == n_sub || result.seqs[i + j].sampled_id != r.draft_ids[j]) break;
    ++n_accepted;
  }
  if (n_sub > 1) {
    // KV holds the pending token and the accepted drafts (positions n_kv .. n_kv + a); the
    // rejected drafts' slots go back now, so the pool and the prefix cache never see them.
    r.commit_step(1 + n_accepted, true);
    if (!r.finished()) scheduler_->free_unused_slots(&r);
    spec_proposed_ += uint64_t(n_sub - 1);
    spec_accepted_ += uint64_t(n_accepted);
    ++spec_verify_rows_;
    ++spec_accept_length_[std::to_string(n_accepted)];
  }
  if (r.finished() && r.matched_stop.empty()) {
    const auto t_flush = Clock::now();
    r.text += r.detok->flush();
    host_detokenize_s_ += seconds_since(t_flush);
  }
  // The hand-off: the output built and passed to the request's callback (the server's
  // callback queues it for its HTTP thread).
  const auto t_emit = Clock::now();
  emit(r, std::move(new_ids), r.finished(), std::move(new_logprobs));
  host_handoff_s_ += seconds_since(t_emit);
  if (r.finished()) done.push_back(r.id);
}

}  // namespace seam
