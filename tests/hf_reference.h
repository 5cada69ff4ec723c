// Checking seam against Hugging Face transformers' reference.json (made by
// tools/make_random_models.py beside each random-weight model): the reference prompts, the
// relative error the parity tests bound, and the runner that takes seam's last-token logits
// straight from the ModelRunner (one EXTEND forward, no sampling or scheduling in between).
// Header-only so the CUDA parity test (tests/cuda) needs nothing beyond what it includes.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/sampling_params.h"
#include "engine/engine.h"
#include "engine/engine_bench_access.h"
#include "engine/engine_config.h"
#include "runtime/model_runner.h"
#include "test_util.h"

namespace seam::test {

// A parameterised test's name for the tests/data/hf_tiny model `model` ("tiny-qwen3-moe" ->
// "qwen3_moe"): the name without "tiny-", '-' as '_' (gtest names allow neither).
inline std::string hf_tiny_param_name(const std::string& model) {
  std::string n = model.rfind("tiny-", 0) == 0 ? model.substr(5) : model;
  for (char& ch : n)
    if (ch == '-') ch = '_';
  return n;
}

// One prompt of reference.json: its ids, transformers' 32 greedy ids and last-token logits in
// float32, and (when the file has them) its bfloat16 and float64 last-token logits (the float64
// ones, with transformers' float32 RoPE tables and with float64 ones, are added by
// tools/hf_fp64_reference.py).
struct RefPrompt {
  std::vector<int32_t> ids, greedy_fp32;
  std::vector<float> logits_fp32, logits_bf16, logits_fp64, logits_fp64_rope64;
};

// The prompts of `dir`/reference.json, in file order; empty when the file lists none
// (tools/make_random_models.py --no-reference).
inline std::vector<RefPrompt> load_hf_reference(const std::string& dir) {
  const nlohmann::json ref = nlohmann::json::parse(read_file(dir + "/reference.json"));
  std::vector<RefPrompt> out;
  for (const nlohmann::json& p : ref["prompts"]) {
    RefPrompt r{p["ids"].get<std::vector<int32_t>>(), p["greedy_ids_fp32"].get<std::vector<int32_t>>(),
                p["last_logits_fp32"].get<std::vector<float>>(), {}, {}, {}};
    if (p.contains("last_logits_bf16")) r.logits_bf16 = p["last_logits_bf16"].get<std::vector<float>>();
    if (p.contains("last_logits_fp64")) r.logits_fp64 = p["last_logits_fp64"].get<std::vector<float>>();
    if (p.contains("last_logits_fp64_rope64"))
      r.logits_fp64_rope64 = p["last_logits_fp64_rope64"].get<std::vector<float>>();
    out.push_back(std::move(r));
  }
  return out;
}

// ||a - b|| / ||b||; infinite when `a` holds a non-finite value (so no bound passes it).
inline double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    num += double(a[i] - b[i]) * (a[i] - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

// Last-token logits of each prompt alone (one EXTEND forward each), then, when `batched`, of
// all prompts in one EXTEND batch: [alone..., batched...]. Row r's KV slots start at
// 1 + r * n_row_slots (slot 0 is the pool's padding slot), so n_row_slots must be at least the
// longest prompt and the pool must hold (n_prompts + 1) * n_row_slots slots.
inline std::vector<std::vector<float>> run_logits(ModelRunner& runner, const std::vector<RefPrompt>& prompts,
                                                  int vocab, int n_row_slots, bool batched = true) {
  std::vector<std::vector<float>> out;
  auto run = [&](const std::vector<size_t>& which) {
    ForwardBatch fb;
    fb.mode = ForwardMode::extend;
    fb.qo_indptr.push_back(0);
    int row = 0;
    for (size_t w : which) {
      const auto& ids = prompts[w].ids;
      std::vector<int32_t> slots(ids.size());
      for (size_t p = 0; p < ids.size(); ++p) slots[p] = int32_t(1 + row * n_row_slots + p);
      runner.kv().set_slots(row, 0, slots.data(), int(ids.size()));
      for (size_t p = 0; p < ids.size(); ++p) {
        fb.input_ids.push_back(ids[p]);
        fb.positions.push_back(int32_t(p));
        fb.out_cache_loc.push_back(slots[p]);
      }
      fb.qo_indptr.push_back(fb.qo_indptr.back() + int32_t(ids.size()));
      fb.seq_lens.push_back(int32_t(ids.size()));
      fb.req_rows.push_back(row++);
      fb.sampling.push_back(SeqSampling{});
    }
    fb.n_prefill_seqs = int(which.size());
    std::vector<int32_t> sampled;
    runner.forward(fb, sampled);
    auto all = runner.last_logits(int(which.size()));
    for (size_t i = 0; i < which.size(); ++i)
      out.emplace_back(all.begin() + long(i) * vocab, all.begin() + long(i + 1) * vocab);
  };
  for (size_t w = 0; w < prompts.size(); ++w) run({w});
  if (!batched) return out;
  std::vector<size_t> every(prompts.size());
  for (size_t w = 0; w < prompts.size(); ++w) every[w] = w;
  run(every);
  return out;
}

// What Engine::generate takes to reproduce transformers' greedy ids: each prompt's ids, and
// temperature 0 for n_new tokens past any EOS.
struct GreedyRequests {
  std::vector<std::vector<int32_t>> prompts;
  std::vector<SamplingParams> params;
};
inline GreedyRequests greedy_requests(const std::vector<RefPrompt>& prompts, int n_new = 32) {
  GreedyRequests g;
  for (const RefPrompt& p : prompts) {
    g.prompts.push_back(p.ids);
    SamplingParams sp;
    sp.temperature = 0;
    sp.max_new_tokens = n_new;
    sp.ignore_eos = true;
    g.params.push_back(sp);
  }
  return g;
}

// A tiny reference model in float32 on the cpu backend (a test may set another device):
// run_logits' rows of 64 slots (prompts up to 64 tokens, 4 rows) fit the pool.
inline EngineConfig tiny_engine_config(const std::string& dir) {
  EngineConfig cfg;
  cfg.model_path = dir;
  cfg.device = Device::cpu;
  cfg.dtype = "float32";
  cfg.context_length = 128;
  cfg.max_running_requests = 4;
  cfg.max_total_tokens = 1024;
  return cfg;
}

// An engine of `cfg`'s last-token logits of each prompt alone (run_logits, rows of 64 slots).
inline std::vector<std::vector<float>> engine_prompt_logits(const EngineConfig& cfg, const std::vector<RefPrompt>& prompts) {
  Engine engine(cfg);
  return run_logits(EngineBenchAccess::runner(engine), prompts, engine.model_info().vocab_size, 64, /*batched=*/false);
}

// An engine of `cfg`'s greedy_requests ids, the prompts submitted together.
inline std::vector<std::vector<int32_t>> engine_greedy_ids(const EngineConfig& cfg, const std::vector<RefPrompt>& prompts) {
  Engine engine(cfg);
  const GreedyRequests g = greedy_requests(prompts);
  std::vector<std::vector<int32_t>> out;
  for (const auto& r : engine.generate(g.prompts, g.params)) out.push_back(r.output_ids);
  engine.wait_idle();
  return out;
}

}  // namespace seam::test
