// seam bench-one-batch: the latency of one static batch, as sglang's
// bench_one_batch: a prefill of batch_size x input_len tokens, then
// output_len decode steps; or, with --mode, a chosen step kind repeated.
//   --mode extend : EXTEND steps of batch_size x input_len tokens
//   --mode decode : DECODE steps of batch_size rows at context input_len
//   --mode mixed  : MIXED steps, one input_len-token chunk + batch_size decode rows (verify rows
//                   of k + 1 tokens with --speculative-num-draft-tokens k)
//   --mode verify : speculative verify steps against plain decode steps (bench_verify_sweep.cpp)
//   --mode generate: end-to-end generation through the engine loop (bench_generate.cpp)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>

#include "backend/backend.h"
#include "cli/bench_one_batch.h"
#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "engine/engine.h"
#include "engine/engine_bench_access.h"
#include "graph/graph_buckets.h"
#include "kv/kv_pool.h"
#include "runtime/model_runner.h"

namespace seam::cli {

nlohmann::json phase_medians(const std::vector<StepTiming>& phases) {
  auto med = [&](double StepTiming::*m) {
    std::vector<double> v;
    for (const StepTiming& t : phases) v.push_back(t.*m);
    return median(v);
  };
  return {{"prepare_ms", med(&StepTiming::prepare_ms)},
          {"launch_ms", med(&StepTiming::launch_ms)},
          {"wait_ms", med(&StepTiming::wait_ms)},
          {"gpu_ms", med(&StepTiming::gpu_ms)}};
}

const char* path_name(StepPath p) {
  return p == StepPath::decode_graph ? "decode_graph" : p == StepPath::piecewise_graph ? "piecewise_graph" : "eager";
}

int bench_one_batch_command(int argc, char** argv) {
  CLI::App app("seam bench-one-batch: latency of one static batch", "seam bench-one-batch");
  EngineFlags flags;
  flags.add_to(app);
  int batch_size = 1, input_len = 1024, output_len = 16, reps = 10;
  std::string mode = "all", verify_batch_sizes, verify_draft_tokens;
  GenerateBench gen;
  bool worst_case_drafts = false;
  app.add_option("--batch-size", batch_size, "sequences in the batch");
  app.add_option("--input-len", input_len, "prompt tokens per sequence (the chunk in mixed mode)");
  app.add_option("--output-len", output_len, "decode steps (tokens per request in generate mode)");
  app.add_option("--mode", mode, "all | extend | decode | mixed | verify | generate")
      ->check(CLI::IsMember({"all", "extend", "decode", "mixed", "verify", "generate"}));
  app.add_option("--reps", reps, "repetitions of the timed step in extend/decode/mixed/verify mode");
  app.add_option("--verify-batch-sizes", verify_batch_sizes,
                 "verify mode: batch sizes swept in one start, e.g. 1,2,4,8 (default: --batch-size)");
  app.add_option("--verify-draft-tokens", verify_draft_tokens,
                 "verify mode: draft counts k swept, e.g. 1,2,3,4 (default: --speculative-num-draft-tokens, or 4)");
  app.add_option("--seed", gen.seed, "generate mode: seed of the random prompts");
  app.add_flag("--worst-case-drafts", worst_case_drafts,
               "generate mode with NGRAM: every verify row gets k drafts drawn at random from the vocabulary "
               "(almost never accepted): speculation's worst case");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  SEAM_CHECK(batch_size >= 1 && input_len >= 1 && output_len >= 1 && reps >= 1, "sizes must be >= 1");
  SEAM_CHECK(mode == "verify" || (verify_batch_sizes.empty() && verify_draft_tokens.empty()),
             "--verify-batch-sizes / --verify-draft-tokens need --mode verify");
  SEAM_CHECK(mode == "generate" || !worst_case_drafts, "--worst-case-drafts needs --mode generate");
  EngineConfig cfg = flags.finish();
  cfg.bench_worst_case_drafts = worst_case_drafts;
  VerifySweep sweep;
  int n_draft = 0;  // mixed mode: draft tokens of each verify row riding beside the chunk
  if (mode == "verify") {
    sweep.batch_sizes = verify_batch_sizes.empty() ? std::vector<int>{batch_size}
                                                   : parse_bucket_list(verify_batch_sizes, "--verify-batch-sizes");
    const int k = cfg.speculative_num_draft_tokens > 0 ? cfg.speculative_num_draft_tokens : 4;
    sweep.draft_tokens = verify_draft_tokens.empty() ? std::vector<int>{k}
                                                     : parse_bucket_list(verify_draft_tokens, "--verify-draft-tokens");
    sweep.input_len = input_len;
    sweep.reps = reps;
    configure_verify_sweep(sweep, cfg);
    batch_size = sweep.batch_sizes.back();
  } else if (mode == "mixed" && cfg.speculative_num_draft_tokens > 0) {
    n_draft = cfg.speculative_num_draft_tokens;
    VerifySweep one{{batch_size}, {n_draft}, input_len, reps};
    configure_verify_sweep(one, cfg);
  }
  const int n_draft_max = mode == "verify" ? sweep.draft_tokens.back() : n_draft;
  const int rows = batch_size + 1;
  const int stride = input_len + output_len + reps + 2 + n_draft_max;
  if (cfg.max_running_requests < rows) cfg.max_running_requests = rows;
  if (cfg.context_length < stride) cfg.context_length = std::max(cfg.context_length, stride);
  if (cfg.max_total_tokens <= 0) cfg.max_total_tokens = rows * stride;
  // verify / generate: the context is filled one row at a time (or by the engine itself).
  const int prefill_tokens = mode == "mixed"    ? input_len + batch_size * (n_draft + 1)
                             : mode == "verify" ? input_len
                             : mode == "generate" ? 0
                                                  : batch_size * input_len;
  if (cfg.chunked_prefill_size < prefill_tokens) cfg.chunked_prefill_size = prefill_tokens;
  // Its steps go to the ranks directly (EngineBenchAccess::on_every_rank), not through the step
  // channel the other nodes follow: one node only.
  SEAM_CHECK(cfg.nnodes == 1, "bench-one-batch runs on one node (--nnodes 1); time several nodes with serve + "
             "bench-serving");
  Engine engine(cfg);
  if (mode == "generate") {
    // The engine owns its page table here: no hand-built rows.
    gen.batch_size = batch_size;
    gen.input_len = input_len;
    gen.output_len = output_len;
    nlohmann::json out;
    out["mode"] = mode;
    out["speculative_algorithm"] = cfg.speculative_algorithm.empty() ? "none" : cfg.speculative_algorithm;
    out["worst_case_drafts"] = worst_case_drafts;
    run_generate(gen, engine, out);
    std::cout << out.dump() << std::endl;
    return 0;
  }
  ModelRunner& runner = EngineBenchAccess::runner(engine);
  Bench b{engine, runner, engine.model_info().vocab_size, stride};
  b.assign_rows(rows);

  nlohmann::json out;
  out["batch_size"] = batch_size;
  out["input_len"] = input_len;
  out["output_len"] = output_len;
  out["mode"] = mode;
  out["dtype"] = dtype_name(runner.model().dtype());
  out["device"] = runner.backend().name();
  StepReport report;

  if (mode == "verify") run_verify_sweep(sweep, b, out);
  if (mode == "all" || mode == "extend") {
    ForwardBatch fb;
    fb.mode = ForwardMode::extend;
    for (int s = 0; s < batch_size; ++s) b.add_seq(fb, s, 0, input_len);
    fb.n_prefill_seqs = batch_size;
    b.time_step(fb, &report);  // warm-up
    std::vector<double> t;
    std::vector<StepTiming> phases;
    for (int i = 0; i < (mode == "all" ? 3 : reps); ++i) t.push_back(b.time_step(fb, &report, &phases));
    const double lat = median(t);
    out["prefill_latency_s"] = lat;
    out["prefill_phases"] = phase_medians(phases);
    out["prefill_throughput_tok_s"] = batch_size * input_len / lat;
    out["prefill_path"] = path_name(report.path);
    std::printf("Prefill. latency: %.5f s, throughput: %10.2f token/s (%s)\n", lat, batch_size * input_len / lat,
                path_name(report.path));
  }
  if (mode == "all" || mode == "decode") {
    if (mode == "decode") {  // fill the context first
      ForwardBatch fb;
      fb.mode = ForwardMode::extend;
      for (int s = 0; s < batch_size; ++s) b.add_seq(fb, s, 0, input_len);
      fb.n_prefill_seqs = batch_size;
      b.forward_eager(fb);
    }
    std::vector<double> t;
    std::vector<StepTiming> phases;
    const int steps = mode == "all" ? output_len : reps + 1;
    for (int k = 0; k < steps; ++k) {
      ForwardBatch fb;
      fb.mode = ForwardMode::decode;
      for (int s = 0; s < batch_size; ++s) b.add_seq(fb, s, input_len + (mode == "all" ? k : 0), 1);
      const double dt = b.time_step(fb, &report, k > 0 ? &phases : nullptr);
      if (k > 0) t.push_back(dt);  // the first step warms up
    }
    const double lat = median(t);
    out["decode_median_latency_s"] = lat;
    out["decode_phases"] = phase_medians(phases);
    out["decode_throughput_tok_s"] = batch_size / lat;
    out["decode_path"] = path_name(report.path);
    std::printf("Decode.  median latency: %.5f s, median throughput: %10.2f token/s (%s)\n", lat, batch_size / lat,
                path_name(report.path));
  }
  if (mode == "mixed") {
    // Decode rows at context input_len ride along with one input_len-token chunk; with
    // --speculative-num-draft-tokens k they are verify rows of k + 1 tokens each.
    b.fill_context(batch_size, input_len);
    std::vector<double> t_mixed, t_chunk;
    for (int k = 0; k <= reps; ++k) {
      ForwardBatch fb;
      fb.mode = ForwardMode::mixed;
      b.add_seq(fb, batch_size, 0, input_len);
      fb.n_prefill_seqs = 1;
      for (int s = 0; s < batch_size; ++s) {
        if (n_draft > 0)
          b.add_verify_row(fb, s, input_len, n_draft);
        else
          b.add_seq(fb, s, input_len, 1);
      }
      const double dt = b.time_step(fb, &report);
      ForwardBatch chunk;
      chunk.mode = ForwardMode::extend;
      b.add_seq(chunk, batch_size, 0, input_len);
      chunk.n_prefill_seqs = 1;
      StepReport chunk_report;
      const double dc = b.time_step(chunk, &chunk_report);
      if (k > 0) t_mixed.push_back(dt), t_chunk.push_back(dc);
    }
    const double lm = median(t_mixed), lc = median(t_chunk);
    out["mixed_median_latency_s"] = lm;
    out["chunk_alone_median_latency_s"] = lc;
    out["mixed_path"] = path_name(report.path);
    out["mixed_draft_tokens"] = n_draft;
    out["mixed_decode_rows"] = batch_size * (n_draft + 1);
    std::printf("Mixed.   median latency: %.5f s (chunk of %d alone: %.5f s, %d %s rows add %.1f%%) (%s)\n", lm,
                input_len, lc, batch_size, n_draft > 0 ? "verify" : "decode", 100.0 * (lm - lc) / lc,
                path_name(report.path));
  }
  const GraphStats& g = runner.graph_stats();
  out["decode_graph_replays"] = g.decode_graph_replays;
  out["piecewise_replays"] = g.piecewise_replays;
  out["eager_steps"] = g.eager_steps;
  out["captures_after_seal"] = g.captures_after_seal;
  const nlohmann::json start = engine.stats().to_json();
  for (const char* k : {"decode_capture_s", "piecewise_capture_s", "decode_graph_bytes", "piecewise_graph_bytes",
                        "captured_decode_keys", "captured_piecewise_keys", "kv_pool_tokens"})
    out[k] = start[k];
  std::cout << out.dump() << std::endl;
  return 0;
}

}  // namespace seam::cli
