#include "cli/engine_flags.h"

#include "backend/backend_factory.h"
#include "core/error.h"
#include "core/log.h"
#include "engine/engine_setup.h"

namespace seam::cli {

void EngineFlags::add_to(CLI::App& app) {
  EngineConfig& c = config;
  app.add_option("--model-path", c.model_path, "Hugging Face model folder")->required();
  app.add_option("--tokenizer-path", c.tokenizer_path, "tokenizer folder (default: the model folder)");
  app.add_option("--device", device, "cpu | cuda | auto (cuda when a GPU is present)");
  app.add_option("--dtype", c.dtype, "auto | bfloat16 | float16 | float32");
  app.add_option("--quantization", c.quantization,
                 "fp8: quantize a float checkpoint's linear layers to FP8 at load (per-channel weights, "
                 "dynamic per-token activations); FP8 checkpoints load as FP8 without it; a weight-only FP8 "
                 "checkpoint (W8A16, dequantized at load without it) runs as FP8 with dynamic activations");
  app.add_option("--load-format", c.load_format,
                 "auto | safetensors | dummy: dummy builds the model from config.json alone with random weights "
                 "filled on the device (benchmarks; a tokenizer is still read from the folder)");
  app.add_option("--kv-cache-dtype", c.kv_cache_dtype,
                 "auto | fp8_e4m3 (fp8): the KV cache's element type; fp8_e4m3 holds twice the tokens");
  app.add_option("--mem-fraction-static", c.mem_fraction_static, "fraction of GPU memory for weights + KV cache");
  app.add_option("--max-total-tokens", c.max_total_tokens, "cap on the KV pool, in tokens");
  app.add_option("--chunked-prefill-size", c.chunked_prefill_size, "token budget of one step");
  app.add_option("--max-running-requests", c.max_running_requests, "cap on running requests");
  app.add_flag("--enable-mixed-chunk", c.enable_mixed_chunk, "decode rows ride along with prefill chunks");
  app.add_flag("--enable-output-overlap", c.enable_output_overlap,
               "hand each step's outputs to the server while the device runs the next step (the default)");
  app.add_flag_callback(
      "--disable-output-overlap", [&c] { c.enable_output_overlap = false; },
      "hand each step's outputs to the server between steps, not while the device runs the next one");
  app.add_flag("--disable-radix-cache", c.disable_radix_cache, "turn the prefix cache off");
  app.add_flag("--disable-logprobs", c.disable_logprobs,
               "refuse requests for logprobs, and keep no [max seqs, vocab] copy of the raw logits for them");
  app.add_option("--context-length", c.context_length, "max prompt + output tokens");
  app.add_option("--random-seed", c.random_seed, "seed for requests that give none");
  app.add_flag("--disable-cuda-graph", c.disable_cuda_graph, "run every step eagerly");
  app.add_flag("--disable-piecewise-cuda-graph", c.disable_piecewise_cuda_graph, "no piecewise graphs");
  app.add_option("--cuda-graph-max-bs", c.cuda_graph_max_bs, "largest decode graph batch size");
  app.add_option("--cuda-graph-bs", c.cuda_graph_bs, "decode graph batch sizes, e.g. 1,2,4,8");
  app.add_option("--piecewise-cuda-graph-max-tokens", c.piecewise_cuda_graph_max_tokens,
                 "largest piecewise graph token count (default: the chunked-prefill size)");
  app.add_option("--piecewise-cuda-graph-tokens", c.piecewise_cuda_graph_tokens,
                 "piecewise graph token counts, e.g. 16,64,256");
  app.add_flag("--gemm-autotune", c.gemm_autotune,
               "time cuBLASLt's candidate kernels for large GEMMs at start-up and keep the fastest (cuda)");
  app.add_option("--gemm-autotune-min-rows", c.gemm_autotune_min_rows,
                 "smallest GEMM row count (tokens) that is tuned (default 256)");
  app.add_option("--gemm-autotune-candidates", c.gemm_autotune_candidates,
                 "candidate kernels timed per GEMM shape (default 8)");
  app.add_option("--grammar-cache-mb", c.grammar_cache_mb,
                 "memory for compiled structured-output grammars, cached by their text (default 512)");
  app.add_option("--speculative-algorithm", c.speculative_algorithm,
                 "speculative decoding: NGRAM (prompt lookup) | STANDALONE (draft model); default off");
  app.add_option("--speculative-num-draft-tokens", c.speculative_num_draft_tokens,
                 "draft tokens verified per request and step (default 4)");
  app.add_option("--speculative-num-steps", c.speculative_num_steps,
                 "draft-model steps per verify step (STANDALONE; default: the draft token count)");
  app.add_option("--speculative-draft-model-path", c.speculative_draft_model_path,
                 "draft model folder (STANDALONE; same vocabulary as the target)");
  app.add_option("--speculative-ngram-min-match-window-size", c.speculative_ngram_min_match_window_size,
                 "NGRAM: shortest recent-token suffix matched against the prompt and output (default 1)");
  app.add_option("--speculative-ngram-max-match-window-size", c.speculative_ngram_max_match_window_size,
                 "NGRAM: longest recent-token suffix matched (default 12)");
  app.add_option("--speculative-max-batch-size", c.speculative_max_batch_size,
                 "no drafting while more requests than this decode (default " +
                     std::to_string(default_speculative_max_batch_size) + ")");
  app.add_flag("--speculative-disable-backoff", c.speculative_disable_backoff,
               "draft on every step: no per-request back-off after verify rows that accepted nothing (default: "
               "back off 1, 2, 4, ... up to " +
                   std::to_string(default_speculative_max_backoff_steps) + " steps)");
  app.add_option("--tp-size,--tp", c.tp_size,
                 "tensor parallelism: split the model over this many ranks (GPUs), default 1");
  app.add_option("--nnodes", c.nnodes, "machines the tensor-parallel ranks span (default 1)");
  app.add_option("--node-rank", c.node_rank, "this machine's index among --nnodes (node 0 serves)");
  app.add_option("--dist-init-addr", c.dist_init_addr,
                 "HOST:PORT where node 0 serves the tensor-parallel rendezvous (needed with --nnodes > 1)");
  app.add_option("--dist-timeout", c.dist_timeout,
                 "seconds a rank waits for the others (start-up and each collective) before failing (default 300)");
  app.add_option("--log-level", log_level, "debug | info | warning | error (default info)");
  app.add_option("--gemm-autotune-cache", c.gemm_autotune_cache,
                 "file that keeps tuning results across runs (default ~/.cache/seam/gemm_autotune.json; none: off)");
}

EngineConfig EngineFlags::finish() {
  log::set_level(log::parse_level(log_level));
  EngineConfig c = config;
  if (device == "auto") {
    c.device = cuda_device_available() ? Device::cuda : Device::cpu;
  } else if (device == "cpu") {
    c.device = Device::cpu;
  } else if (device == "cuda") {
    c.device = Device::cuda;
  } else {
    throw Error("--device: '" + device + "' is not one of cpu, cuda, auto");
  }
  return c;
}

}  // namespace seam::cli
