// seam bench-one-batch --mode generate: end-to-end generation through the engine loop, with
// whatever speculation the engine flags ask for (none, NGRAM, STANDALONE; --worst-case-drafts
// for NGRAM's worst case). batch_size requests of input_len random ids generate output_len
// tokens each (greedy, EOS ignored), submitted at once after a warm-up request; the wall time
// of the batch gives output tok/s, and the engine's stats over the run give the accept length
// actually seen (random-weight models often fall into cycles, which n-gram lookup finds).
#include <chrono>
#include <map>
#include <cstdio>
#include <random>

#include "cli/bench_one_batch.h"
#include "engine/engine.h"

namespace seam::cli {

void run_generate(const GenerateBench& g, Engine& engine, nlohmann::json& out) {
  const int vocab = engine.model_info().vocab_size;
  std::mt19937_64 rng(g.seed);
  auto prompt = [&](int n) {
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (int32_t& t : ids) t = int32_t(rng() % uint64_t(vocab));
    return ids;
  };
  SamplingParams p;
  p.temperature = 0.f;
  p.ignore_eos = true;
  {  // warm-up: the first steps of a fresh engine pay one-time costs
    SamplingParams w = p;
    w.max_new_tokens = 8;
    engine.generate({prompt(g.input_len)}, {w});
    engine.wait_idle();
  }
  const EngineStats before = engine.stats();
  p.max_new_tokens = g.output_len;
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < g.batch_size; ++i) prompts.push_back(prompt(g.input_len));
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<GenerateResult> results =
      engine.generate(prompts, std::vector<SamplingParams>(size_t(g.batch_size), p));
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  engine.wait_idle();
  const EngineStats after = engine.stats();

  uint64_t n_out = 0;
  double rate_sum = 0;  // per request, after its first token: the decode rate a client sees
  for (const GenerateResult& r : results) {
    n_out += r.output_ids.size();
    if (r.output_ids.size() > 1 && r.e2e_s > r.ttft_s) rate_sum += double(r.output_ids.size() - 1) / (r.e2e_s - r.ttft_s);
  }
  const auto delta = [&](uint64_t EngineStats::*m) { return after.*m - before.*m; };
  const uint64_t rows = delta(&EngineStats::speculative_verify_rows);
  const uint64_t accepted = delta(&EngineStats::speculative_accepted_tokens);
  const uint64_t steps = delta(&EngineStats::steps);
  out["batch_size"] = g.batch_size;
  out["input_len"] = g.input_len;
  out["output_len"] = g.output_len;
  out["wall_s"] = wall;
  out["output_tokens"] = n_out;
  out["output_throughput_tok_s"] = double(n_out) / wall;
  out["decode_tok_s_per_request"] = rate_sum / double(results.size());
  out["steps"] = steps;
  out["tokens_per_step"] = steps ? double(n_out) / double(steps) : 0.0;
  out["speculative_proposed_tokens"] = delta(&EngineStats::speculative_proposed_tokens);
  out["speculative_accepted_tokens"] = accepted;
  out["speculative_verify_rows"] = rows;
  out["speculative_off_steps"] = delta(&EngineStats::speculative_off_steps);
  // The mean accept length: drafts accepted per verify row (a row then emits 1 + a tokens).
  out["mean_accept_length"] = rows ? double(accepted) / double(rows) : 0.0;
  out["verify_steps_decode_graph"] = delta(&EngineStats::verify_steps_decode_graph);
  out["verify_steps_piecewise"] = delta(&EngineStats::verify_steps_piecewise);
  out["verify_steps_eager"] = delta(&EngineStats::verify_steps_eager);
  out["decode_graph_replays"] = delta(&EngineStats::decode_graph_replays);
  out["eager_steps"] = delta(&EngineStats::eager_steps);
  out["captures_after_seal"] = after.captures_after_seal;
  std::map<std::string, uint64_t> hist = after.speculative_accept_length;  // the run's rows only
  for (const auto& [a, n] : before.speculative_accept_length) hist[a] -= n;
  std::erase_if(hist, [](const auto& e) { return e.second == 0; });
  out["speculative_accept_length"] = hist;
  std::printf("Generate. %d x %d tokens in %.3f s: %.1f tok/s, %.2f tokens/step, mean accept length %.3f\n",
              g.batch_size, g.output_len, wall, double(n_out) / wall, steps ? double(n_out) / double(steps) : 0.0,
              rows ? double(accepted) / double(rows) : 0.0);
}

}  // namespace seam::cli
