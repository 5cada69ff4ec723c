// The step-building and timing helpers of `seam bench-one-batch` (bench_one_batch_command.cpp),
// shared by its speculative modes: the verify-step sweep (bench_verify_sweep.cpp) and the
// end-to-end generation timing (bench_generate.cpp).
//
// Every bench row s owns a fixed page-table row whose slots are 1 + s * stride + p, so a step
// is built by hand exactly as the scheduler lays it out (forward_batch.h) and timed alone.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "engine/engine_bench_access.h"
#include "engine/engine_config.h"
#include "runtime/model_runner.h"

namespace seam::cli {

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
  // Appends a speculative verify row as the scheduler lays it out (scheduler.h): the request
  // at `row` with n_kv tokens of KV and k drafts becomes k + 1 consecutive one-token rows,
  // sub-row i at position n_kv + i with KV length n_kv + i + 1 and draft_index i. Plain rows
  // already in `fb` get draft_index -1.
  void add_verify_row(ForwardBatch& fb, int row, int n_kv, int k) {
    fb.draft_index.resize(size_t(fb.n_seqs()), -1);
    for (int i = 0; i <= k; ++i) {
      add_seq(fb, row, n_kv + i, 1);
      fb.draft_index.push_back(i);
      fb.sampling.back().step = i;  // output index n_output + i (n_output = 0 here)
    }
  }
  // Fills rows [0, n_rows) with n_tokens of context each, one eager extend per row (the step
  // buffers hold one chunk, not the whole batch's context).
  void fill_context(int n_rows, int n_tokens) {
    for (int s = 0; s < n_rows; ++s) {
      ForwardBatch fill;
      fill.mode = ForwardMode::extend;
      add_seq(fill, s, 0, n_tokens);
      fill.n_prefill_seqs = 1;
      forward_eager(fill);
    }
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

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Medians of the timed steps' phases (StepTiming): where a step's wall time goes on the host,
// and the device's span of the step. wall - gpu_ms is the host time the device does not hide.
nlohmann::json phase_medians(const std::vector<StepTiming>& phases);

const char* path_name(StepPath p);

// --mode verify: for each batch size B and draft count k, the median latency of a DECODE
// step of B plain rows and of a verify step of B rows x (k + 1) tokens, at context
// `input_len`, interleaved; one JSON line per (B, k) on stdout.
struct VerifySweep {
  std::vector<int> batch_sizes, draft_tokens;
  int input_len = 0, reps = 0;
};
// Sets what the sweep needs before the engine starts: speculation on (NGRAM unless named)
// with k = the largest draft count and --speculative-max-batch-size = the largest batch, so
// that resolve_setup captures every verify key B * (k + 1) at start-up, as in serving.
void configure_verify_sweep(const VerifySweep& sweep, EngineConfig& cfg);
void run_verify_sweep(const VerifySweep& sweep, Bench& b, nlohmann::json& out);

// --mode generate: end-to-end generation through the engine loop (speculation as the engine
// flags say): batch_size requests of input_len random ids, output_len tokens each, greedy,
// EOS ignored, after a warm-up request; output tok/s and the speculative stats of the run.
struct GenerateBench {
  int batch_size = 1, input_len = 0, output_len = 0;
  uint64_t seed = 1;
};
void run_generate(const GenerateBench& g, Engine& engine, nlohmann::json& out);

}  // namespace seam::cli
