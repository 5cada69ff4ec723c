#include "engine/engine_setup.h"

#include <algorithm>
#include <cstdio>

#include "backend/gemm_tuning_cache.h"
#include "core/log.h"
#include "graph/graph_buckets.h"

namespace seam {

namespace {
DType parse_dtype(const std::string& s, const ModelConfig& model, Device device) {
  if (s == "float32" || s == "fp32") return DType::f32;
  if (s == "bfloat16" || s == "bf16") return DType::bf16;
  if (s == "float16" || s == "fp16" || s == "half") return DType::f16;
  SEAM_CHECK(s == "auto", "--dtype: '", s, "' is not one of auto, bfloat16, float16, float32");
  if (device == Device::cpu) return DType::f32;
  return model.torch_dtype;  // as sglang: the checkpoint's dtype
}
}  // namespace

ResolvedSetup resolve_setup(const EngineConfig& cfg, const ModelConfig& model, Device device) {
  ResolvedSetup r;
  r.dtype = parse_dtype(cfg.dtype, model, device);
  SEAM_CHECK(device != Device::cpu || r.dtype == DType::f32, "--dtype ", dtype_name(r.dtype),
             ": the cpu backend computes in float32 only");
  SEAM_CHECK(cfg.grammar_cache_mb >= 0, "--grammar-cache-mb must be >= 0, got ", cfg.grammar_cache_mb);
  SEAM_CHECK(cfg.context_length >= 0, "--context-length must be >= 0");
  r.max_context = cfg.context_length > 0 ? cfg.context_length : model.max_position_embeddings;
  SEAM_CHECK(r.max_context >= 2, "context length ", r.max_context, " is too small");

  SchedulerConfig& s = r.scheduler;
  // sglang's defaults: 8192-token chunks on a big GPU; the CPU backend uses small steps.
  s.chunked_prefill_size = cfg.chunked_prefill_size > 0 ? cfg.chunked_prefill_size
                                                        : (device == Device::cpu ? 512 : 8192);
  SEAM_CHECK(cfg.chunked_prefill_size >= 0, "--chunked-prefill-size must be > 0");
  s.max_running_requests = cfg.max_running_requests > 0 ? cfg.max_running_requests
                                                        : (device == Device::cpu ? 64 : 256);
  SEAM_CHECK(cfg.max_running_requests >= 0, "--max-running-requests must be > 0");
  s.enable_mixed_chunk = cfg.enable_mixed_chunk;
  s.max_context = r.max_context;

  SpeculativeSetup& sp = r.speculative;
  const std::string& alg = cfg.speculative_algorithm;
  SEAM_CHECK(alg.empty() || alg == "NGRAM" || alg == "STANDALONE", "--speculative-algorithm: '", alg,
             "' is not one of NGRAM, STANDALONE");
  SEAM_CHECK(alg == "STANDALONE" || cfg.speculative_draft_model_path.empty(),
             "--speculative-draft-model-path needs --speculative-algorithm STANDALONE");
  SEAM_CHECK(alg != "STANDALONE" || !cfg.speculative_draft_model_path.empty(),
             "--speculative-algorithm STANDALONE needs --speculative-draft-model-path");
  SEAM_CHECK(!alg.empty() || (cfg.speculative_num_draft_tokens == 0 && cfg.speculative_num_steps == 0 &&
                              cfg.speculative_max_batch_size == 0),
             "--speculative-num-draft-tokens / --speculative-num-steps / --speculative-max-batch-size need "
             "--speculative-algorithm");
  SEAM_CHECK(cfg.speculative_num_draft_tokens >= 0 && cfg.speculative_num_draft_tokens <= 16,
             "--speculative-num-draft-tokens must be in [1, 16], got ", cfg.speculative_num_draft_tokens);
  SEAM_CHECK(cfg.speculative_num_steps >= 0, "--speculative-num-steps must be >= 1, got ", cfg.speculative_num_steps);
  SEAM_CHECK(cfg.speculative_max_batch_size >= 0, "--speculative-max-batch-size must be >= 1, got ",
             cfg.speculative_max_batch_size);
  SEAM_CHECK(cfg.speculative_ngram_min_match_window_size >= 1 &&
                 cfg.speculative_ngram_min_match_window_size <= cfg.speculative_ngram_max_match_window_size,
             "--speculative-ngram-min-match-window-size (", cfg.speculative_ngram_min_match_window_size,
             ") must be >= 1 and <= --speculative-ngram-max-match-window-size (",
             cfg.speculative_ngram_max_match_window_size, ")");
  SEAM_CHECK(!cfg.bench_worst_case_drafts || alg == "NGRAM", "worst-case drafts need --speculative-algorithm NGRAM");
  if (!alg.empty()) {
    sp.algorithm = alg == "NGRAM" ? SpeculativeAlgorithm::ngram : SpeculativeAlgorithm::standalone;
    sp.n_draft_tokens = cfg.speculative_num_draft_tokens > 0 ? cfg.speculative_num_draft_tokens : 4;
    // A chain draft (no tree): one draft-model step per draft token; fewer steps, fewer drafts.
    sp.n_steps = cfg.speculative_num_steps > 0 ? cfg.speculative_num_steps : sp.n_draft_tokens;
    if (sp.algorithm == SpeculativeAlgorithm::standalone) sp.n_draft_tokens = std::min(sp.n_draft_tokens, sp.n_steps);
    sp.draft_model_path = cfg.speculative_draft_model_path;
    sp.ngram_min_window = cfg.speculative_ngram_min_match_window_size;
    sp.ngram_max_window = cfg.speculative_ngram_max_match_window_size;
    sp.max_batch_size = std::min(
        cfg.speculative_max_batch_size > 0 ? cfg.speculative_max_batch_size : default_speculative_max_batch_size,
        s.max_running_requests);
  }

  GraphConfig& g = r.graphs;
  g.disable_cuda_graph = cfg.disable_cuda_graph;
  g.disable_piecewise_cuda_graph = cfg.disable_piecewise_cuda_graph;
  if (!cfg.disable_cuda_graph) {
    // Verify rows are laid out as one-token rows (scheduler.h), so a verify batch of R rows of
    // k + 1 tokens is the decode key R * (k + 1): the default keys cover the largest one.
    const int max_rows = std::max(s.max_running_requests, sp.max_verify_rows());
    const int max_bs = cfg.cuda_graph_max_bs > 0
                           ? cfg.cuda_graph_max_bs
                           : std::max(std::min(s.max_running_requests, device == Device::cpu ? 16 : 256),
                                      sp.max_verify_rows());
    g.decode_buckets = cfg.cuda_graph_bs.empty() ? default_decode_buckets(max_bs)
                                                 : parse_bucket_list(cfg.cuda_graph_bs, "--cuda-graph-bs");
    // A decode batch never exceeds the running cap (or the verify rows'); larger keys would
    // never be used.
    std::erase_if(g.decode_buckets, [&](int b) { return b > max_rows; });
    if (!cfg.disable_piecewise_cuda_graph) {
      // On the cpu, graphs are a test vehicle and each capture's warm-up costs a
      // real forward: keep the default keys small there.
      const int max_tokens = cfg.piecewise_cuda_graph_max_tokens > 0 ? cfg.piecewise_cuda_graph_max_tokens
                             : device == Device::cpu ? std::min(s.chunked_prefill_size, 512)
                                                     : s.chunked_prefill_size;
      g.piecewise_buckets = cfg.piecewise_cuda_graph_tokens.empty()
                                ? default_piecewise_buckets(max_tokens)
                                : parse_bucket_list(cfg.piecewise_cuda_graph_tokens, "--piecewise-cuda-graph-tokens");
      std::erase_if(g.piecewise_buckets, [&](int b) { return b > s.chunked_prefill_size; });
    }
  }
  r.gemm_autotune = cfg.gemm_autotune;
  SEAM_CHECK(cfg.gemm_autotune || (cfg.gemm_autotune_min_rows == 0 && cfg.gemm_autotune_candidates == 0),
             "--gemm-autotune-min-rows / --gemm-autotune-candidates need --gemm-autotune");
  SEAM_CHECK(cfg.gemm_autotune_min_rows >= 0, "--gemm-autotune-min-rows must be >= 1, got ",
             cfg.gemm_autotune_min_rows);
  SEAM_CHECK(cfg.gemm_autotune_candidates >= 0 && cfg.gemm_autotune_candidates <= 32,
             "--gemm-autotune-candidates must be in [1, 32], got ", cfg.gemm_autotune_candidates);
  if (cfg.gemm_autotune_min_rows > 0) r.gemm_tuning.min_rows = cfg.gemm_autotune_min_rows;
  if (cfg.gemm_autotune_candidates > 0) r.gemm_tuning.n_candidates = cfg.gemm_autotune_candidates;
  SEAM_CHECK(cfg.gemm_autotune || cfg.gemm_autotune_cache.empty(), "--gemm-autotune-cache needs --gemm-autotune");
  if (cfg.gemm_autotune && cfg.gemm_autotune_cache != "none")
    r.gemm_tuning.cache_path = cfg.gemm_autotune_cache.empty() ? GemmTuningCache::default_path() : cfg.gemm_autotune_cache;
  return r;
}

int kv_pool_slots(const EngineConfig& cfg, const ResolvedSetup& setup, Device device, size_t free_at_start,
                  size_t free_now, size_t weight_bytes, size_t bytes_per_slot) {
  int64_t slots = 0;
  if (device == Device::cpu) {
    // Host memory is plentiful for the models the CPU backend serves: enough
    // for every running request at full context, capped at 64k tokens.
    slots = 1 + std::min<int64_t>(int64_t(setup.scheduler.max_running_requests) * setup.max_context, 1 << 16);
  } else {
    SEAM_CHECK(cfg.mem_fraction_static > 0 && cfg.mem_fraction_static < 1, "--mem-fraction-static must be in (0, 1)");
    // sglang's rule: weights + KV take mem_fraction_static of the memory free at
    // start; the rest is left for activations, workspaces and graphs.
    const int64_t budget = int64_t(double(free_at_start) * cfg.mem_fraction_static) - int64_t(weight_bytes);
    const int64_t graph_reserve = int64_t(512) << 20;  // measured use is printed at capture
    const int64_t usable = std::min<int64_t>(budget, int64_t(free_now) - graph_reserve);
    SEAM_CHECK(usable > int64_t(bytes_per_slot) * 16, "not enough device memory for the KV cache: ", usable / (1 << 20),
               " MiB left after weights (", weight_bytes / (1 << 20), " MiB)");
    slots = usable / int64_t(bytes_per_slot);
  }
  if (cfg.max_total_tokens > 0) slots = std::min<int64_t>(slots, int64_t(cfg.max_total_tokens) + 1);
  slots = std::min<int64_t>(slots, int64_t(1) << 30);
  SEAM_CHECK(slots >= 2, "KV pool of ", slots, " slots is too small");
  log::info("KV pool %lld tokens (%.1f MiB)", (long long)(slots - 1),
            double(slots) * double(bytes_per_slot) / (1 << 20));
  return int(slots);
}

}  // namespace seam
