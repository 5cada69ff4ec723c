// seam bench-one-batch --mode verify: the cost of a speculative verify step against a plain
// decode step, the table that says what speculation can buy (architecture.md "Speculative
// decoding"). A verify step of B requests with k drafts is B x (k + 1) one-token DECODE rows
// (scheduler.h), run through the decode graph key the engine would pick for it; a plain decode
// step of B rows at the same context is the floor (one read of the weights). Both are timed
// interleaved, so that clock drift falls on both alike.
//
// With accept length a (drafts accepted per verify row), a verify step emits 1 + a tokens per
// request where a decode step emits 1, so speculation pays while
//   (1 + a) * t_decode(B) > t_verify(B, k),  i.e.  a > t_verify / t_decode - 1
// (break_even_accept_length); scripts/gpu_spec.sh turns the table into speed-ups per accept
// length and into the batch size where the off-switch (--speculative-max-batch-size) engages.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "cli/bench_one_batch.h"
#include "core/error.h"

namespace seam::cli {

void configure_verify_sweep(const VerifySweep& sweep, EngineConfig& cfg) {
  SEAM_CHECK(!sweep.batch_sizes.empty() && !sweep.draft_tokens.empty(), "the verify sweep is empty");
  SEAM_CHECK(sweep.draft_tokens.front() >= 1 && sweep.draft_tokens.back() <= 16,
             "verify draft counts must be in [1, 16]");
  if (cfg.speculative_algorithm.empty()) cfg.speculative_algorithm = "NGRAM";  // no request ever asks it
  cfg.speculative_num_draft_tokens = sweep.draft_tokens.back();
  cfg.speculative_max_batch_size = std::max(cfg.speculative_max_batch_size, sweep.batch_sizes.back());
}

void run_verify_sweep(const VerifySweep& sweep, Bench& b, nlohmann::json& out) {
  const int max_b = sweep.batch_sizes.back(), max_k = sweep.draft_tokens.back();
  b.fill_context(max_b, sweep.input_len);
  int n_points = 0;
  for (int bs : sweep.batch_sizes) {
    for (int k : sweep.draft_tokens) {
      // Every rep feeds the same positions: a verify row at n_kv = input_len writes KV at
      // input_len .. input_len + k (kept clear of the context), a decode row at input_len.
      ForwardBatch decode;
      decode.mode = ForwardMode::decode;
      for (int s = 0; s < bs; ++s) b.add_seq(decode, s, sweep.input_len, 1);
      ForwardBatch verify;
      verify.mode = ForwardMode::decode;
      for (int s = 0; s < bs; ++s) b.add_verify_row(verify, s, sweep.input_len, k);
      std::vector<double> t_decode, t_verify;
      std::vector<StepTiming> phases;
      StepReport rd, rv;
      for (int r = 0; r <= sweep.reps; ++r) {  // rep 0 warms both up
        const double dd = b.time_step(decode, &rd);
        const double dv = b.time_step(verify, &rv, r > 0 ? &phases : nullptr);
        if (r > 0) t_decode.push_back(dd), t_verify.push_back(dv);
      }
      const double td = median(t_decode), tv = median(t_verify);
      nlohmann::json p;
      p["batch_size"] = bs;
      p["draft_tokens"] = k;
      p["verify_rows"] = bs * (k + 1);
      p["input_len"] = sweep.input_len;
      p["decode_median_latency_s"] = td;
      p["verify_median_latency_s"] = tv;
      p["verify_over_decode"] = tv / td;
      p["break_even_accept_length"] = tv / td - 1;
      p["decode_path"] = path_name(rd.path);
      p["verify_path"] = path_name(rv.path);
      p["verify_graph_key"] = rv.graph_key;
      p["verify_padding"] = rv.n_padding;
      if (!rv.eager_reason.empty()) p["verify_eager_reason"] = rv.eager_reason;
      p["verify_phases"] = phase_medians(phases);
      std::printf("Verify.  B=%d k=%d: %d rows %.5f s (%s key %d), decode %.5f s (%s): x%.3f, break-even accept "
                  "length %.3f\n",
                  bs, k, bs * (k + 1), tv, path_name(rv.path), rv.graph_key, td, path_name(rd.path), tv / td,
                  tv / td - 1);
      std::cout << nlohmann::json{{"verify_point", p}}.dump() << std::endl;
      ++n_points;
    }
  }
  out["verify_points"] = n_points;  // each printed above as {"verify_point": ...}
  out["verify_max_batch_size"] = max_b;
  out["verify_max_draft_tokens"] = max_k;
}

}  // namespace seam::cli
