// seam bench-one-batch: the latency of one static batch, as sglang's
// bench_one_batch: a prefill of batch_size x input_len tokens, then
// output_len decode steps; or, with --mode, a chosen step kind repeated.
//   --mode extend : EXTEND steps of batch_size x input_len tokens
//   --mode decode : DECODE steps of batch_size rows at context input_len
//   --mode mixed  : MIXED steps, one input_len-token chunk + batch_size decode rows
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>

#include "backend/backend.h"
#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "engine/engine.h"
#include "engine/engine_bench_access.h"
#include "kv/kv_pool.h"
#include "runtime/model_runner.h"

namespace seam::cli {

namespace {

// With --tp-size above 1 every rank of the engine runs each step (their collectives meet):
// the steps go through EngineBenchAccess::on_every_rank, and only rank 0's runner reports.
struct Bench {
  Engine& engine;
  ModelRunner& runner;  // rank 0's
  int vocab;
  int stride;  // page-table span of one sequence
  std::mt19937 rng{1234};

  void assign_rows(int n_rows) {
    EngineBenchAccess::on_every_rank(engine, [&](ModelRunner& r) {
      std::vector<int32_t> slots(static_cast<size_t>(stride));
      for (int s = 0; s < n_rows; ++s) {
        for (int p = 0; p < stride; ++p) slots[size_t(p)] = 1 + s * stride + p;
        r.kv().set_slots(s, 0, slots.data(), stride);
      }
      r.backend().synchronize();
    });
  }
  void forward_eager(const ForwardBatch& fb) {
    EngineBenchAccess::on_every_rank(engine, [&](ModelRunner& r) {
      std::vector<int32_t> ids;
      r.forward_eager(fb, ids);
    });
  }
  // Appends a sequence at `row` feeding positions [start, start+n).
  void add_seq(ForwardBatch& fb, int row, int start, int n) {
    for (int p = start; p < start + n; ++p) {
      fb.input_ids.push_back(int32_t(rng() % uint32_t(vocab)));
      fb.positions.push_back(p);
      fb.out_cache_loc.push_back(1 + row * stride + p);
    }
    if (fb.qo_indptr.empty()) fb.qo_indptr.push_back(0);
    fb.qo_indptr.push_back(fb.qo_indptr.back() + n);
    fb.seq_lens.push_back(start + n);
    fb.req_rows.push_back(row);
    fb.sampling.push_back(SeqSampling{});
  }
  double time_step(const ForwardBatch& fb, StepReport* report, std::vector<StepTiming>* phases = nullptr) {
    runner.backend().synchronize();
    auto t0 = std::chrono::steady_clock::now();
    EngineBenchAccess::on_every_rank(engine, [&](ModelRunner& r) {
      std::vector<int32_t> ids;
      r.forward(fb, ids, &r == &runner ? report : nullptr);  // ends with the sampled ids on the host
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (phases) phases->push_back(runner.last_timing());
    return s;
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Medians of the timed steps' phases (StepTiming): where a step's wall time goes on the host,
// and the device's span of the step. wall - gpu_ms is the host time the device does not hide.
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

}  // namespace

int bench_one_batch_command(int argc, char** argv) {
  CLI::App app("seam bench-one-batch: latency of one static batch", "seam bench-one-batch");
  EngineFlags flags;
  flags.add_to(app);
  int batch_size = 1, input_len = 1024, output_len = 16, reps = 10;
  std::string mode = "all";
  app.add_option("--batch-size", batch_size, "sequences in the batch");
  app.add_option("--input-len", input_len, "prompt tokens per sequence (the chunk in mixed mode)");
  app.add_option("--output-len", output_len, "decode steps");
  app.add_option("--mode", mode, "all | extend | decode | mixed")->check(CLI::IsMember({"all", "extend", "decode", "mixed"}));
  app.add_option("--reps", reps, "repetitions of the timed step in extend/decode/mixed mode");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  SEAM_CHECK(batch_size >= 1 && input_len >= 1 && output_len >= 1, "sizes must be >= 1");
  EngineConfig cfg = flags.finish();
  const int rows = batch_size + 1;
  const int stride = input_len + output_len + reps + 2;
  if (cfg.max_running_requests < rows) cfg.max_running_requests = rows;
  if (cfg.context_length < stride) cfg.context_length = std::max(cfg.context_length, stride);
  if (cfg.max_total_tokens <= 0) cfg.max_total_tokens = rows * stride;
  const int prefill_tokens = mode == "mixed" ? input_len + batch_size : batch_size * input_len;
  if (cfg.chunked_prefill_size < prefill_tokens) cfg.chunked_prefill_size = prefill_tokens;
  // Its steps go to the ranks directly (EngineBenchAccess::on_every_rank), not through the step
  // channel the other nodes follow: one node only.
  SEAM_CHECK(cfg.nnodes == 1, "bench-one-batch runs on one node (--nnodes 1); time several nodes with serve + "
             "bench-serving");
  Engine engine(cfg);
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
    // Decode rows at context input_len ride along with one input_len-token chunk.
    for (int s = 0; s < batch_size; ++s) {  // one sequence per step: the buffers hold one chunk
      ForwardBatch fill;
      fill.mode = ForwardMode::extend;
      b.add_seq(fill, s, 0, input_len);
      fill.n_prefill_seqs = 1;
      b.forward_eager(fill);
    }
    std::vector<double> t_mixed, t_chunk;
    for (int k = 0; k <= reps; ++k) {
      ForwardBatch fb;
      fb.mode = ForwardMode::mixed;
      b.add_seq(fb, batch_size, 0, input_len);
      fb.n_prefill_seqs = 1;
      for (int s = 0; s < batch_size; ++s) b.add_seq(fb, s, input_len, 1);
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
    std::printf("Mixed.   median latency: %.5f s (chunk of %d alone: %.5f s, decode rows add %.1f%%) (%s)\n", lm,
                input_len, lc, 100.0 * (lm - lc) / lc, path_name(report.path));
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
