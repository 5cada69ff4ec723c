// EngineConfig: every engine option, validated once; derived values computed
// here. CLI -> EngineConfig -> each component gets only what it needs.
#pragma once
#include <string>
#include <vector>

#include "core/tensor.h"

namespace seam {

struct EngineConfig {
  std::string model_path;
  std::string tokenizer_path;  // defaults to model_path
  Device device = Device::cpu;
  std::string dtype = "auto";  // auto | bfloat16 | float16 | float32
  std::string quantization;    // "" | none | fp8 (sglang/vLLM --quantization: FP8 at load)
  std::string load_format = "auto";  // auto | safetensors | dummy (random weights from config.json; vLLM's flag)
  std::string kv_cache_dtype = "auto";  // auto | fp8_e4m3 (fp8): the KV pool's element type (kv_cache_dtype.h)
  double mem_fraction_static = 0.88;
  int max_total_tokens = 0;        // KV pool cap in tokens; 0 = from memory
  int chunked_prefill_size = 0;    // 0 = default for the device
  int max_running_requests = 0;    // 0 = default
  bool enable_mixed_chunk = false;
  // Hand each step's outputs to their callbacks (the server's streams) while the device runs
  // the next step instead of between steps (engine_core.h, deliver); on by default since the H200
  // measured FP8 8B serving +1.6 to +2.2 % with it (docs/performance.md, twenty-eighth pass).
  bool enable_output_overlap = true;  // --disable-output-overlap turns it off
  bool disable_radix_cache = false;
  int context_length = 0;          // 0 = the model's max_position_embeddings
  uint64_t random_seed = 0;        // seeds requests that give none
  // graphs
  bool disable_cuda_graph = false;
  bool disable_piecewise_cuda_graph = false;
  int cuda_graph_max_bs = 0;       // 0 = default
  std::string cuda_graph_bs;       // comma list, overrides the default buckets
  int piecewise_cuda_graph_max_tokens = 0;  // 0 = chunked_prefill_size
  std::string piecewise_cuda_graph_tokens;  // comma list
  int max_queued_requests = 0;     // 0 = unlimited (server)
  // No request may ask for logprobs (refused as invalid): the runner then needs no copy of
  // the raw logits ([max_seqs, vocab] float32, allocated at start-up otherwise).
  bool disable_logprobs = false;
  // structured output: compiled grammars are cached by constraint text, LRU, this many MiB
  int grammar_cache_mb = 512;
  // start-up GEMM tuning (CUDA): time cuBLASLt's candidates during the graph warm-ups
  bool gemm_autotune = false;
  int gemm_autotune_min_rows = 0;    // 0 = default (256); needs gemm_autotune
  int gemm_autotune_candidates = 0;  // 0 = default (8); needs gemm_autotune
  std::string gemm_autotune_cache;   // "" = GemmTuningCache::default_path(); "none" = no cache
  // speculative decoding (sglang's names; engine/speculative_setup.h validates them)
  std::string speculative_algorithm;            // "" (off) | NGRAM | STANDALONE
  int speculative_num_draft_tokens = 0;         // drafts per verify row (k); 0 = default (4)
  int speculative_num_steps = 0;                // draft-model steps (STANDALONE); 0 = k
  std::string speculative_draft_model_path;     // STANDALONE
  int speculative_ngram_min_match_window_size = 1;   // NGRAM: shortest suffix matched
  int speculative_ngram_max_match_window_size = 12;  // NGRAM: longest suffix matched
  int speculative_max_batch_size = 0;           // no drafts while more requests decode; 0 = default
                                                //   (default_speculative_max_batch_size, engine_setup.h)
  bool speculative_disable_backoff = false;     // draft on every step even after all-rejected verify
                                                //   rows (engine/draft_backoff.h)
  // Benchmarks only (bench-one-batch --worst-case-drafts; no serving flag): NGRAM drafts k random
  // tokens for every verify row (engine/random_draft_proposer.h), speculation's worst case.
  bool bench_worst_case_drafts = false;
  // tensor parallelism (sglang's names; engine/tp_plan.h validates them)
  int tp_size = 1;              // ranks the model is split over (one GPU each on cuda)
  int nnodes = 1;               // machines; each hosts tp_size / nnodes ranks
  int node_rank = 0;            // this machine's index; node 0 runs the scheduler and the store
  std::string dist_init_addr;   // HOST:PORT of node 0's store; "" = 127.0.0.1 and a free port (one node)
  int dist_timeout = 300;       // seconds: rendezvous and each collective; a silent rank fails the others after it
};

}  // namespace seam
