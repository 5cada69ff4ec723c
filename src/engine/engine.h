// Engine: the engine loop on its own thread, behind a typed face. Requests come
// in through a thread-safe submit(); each step the loop schedules one batch,
// runs it, and streams new tokens and text to per-request callbacks (called on
// the engine thread: they must be quick and must not call back into the engine).
//
// This header is all the server and the CLI see of the engine: it includes only
// api/, tokenizer/ and core/ (and the engine's own config). The machinery lives
// in EngineCore (engine/engine_core.h). Benchmarks that drive forward steps
// themselves go through engine/engine_bench_access.h.
//
// Errors (api/error_kind.h): submit() throws RequestError -- invalid_request for a
// request that can never be served as given, overloaded when --max-queued-requests
// requests are in flight, engine_dead once a device fault stopped the engine.
// A failed step reports internal / engine_dead in the RequestOutput instead.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/engine_request.h"
#include "api/engine_stats.h"
#include "api/error_kind.h"
#include "api/generate_result.h"
#include "api/model_info.h"
#include "api/request_output.h"
#include "api/sampling_params.h"
#include "engine/engine_config.h"
#include "tokenizer/tokenizer.h"

namespace seam {

class EngineCore;

class Engine {
 public:
  explicit Engine(const EngineConfig& config);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const ModelInfo& model_info() const;
  const Tokenizer& tokenizer() const;
  int max_context() const;
  int kv_pool_tokens() const;
  const EngineConfig& config() const;

  // Throws RequestError when submit() would refuse the request (bad params, a
  // prompt that cannot fit the context or the KV pool); queues nothing.
  void check_request(const std::vector<int32_t>& prompt_ids, const SamplingParams& params) const;
  // Validates and queues a request; returns its id. Throws RequestError (nothing
  // is then queued). Thread-safe.
  uint64_t submit(std::vector<int32_t> prompt_ids, const SamplingParams& params, StreamCallback callback);
  // Validates and queues every request of `group`, or none (the n choices of one
  // API request are admitted together). Ids in group order. Thread-safe.
  std::vector<uint64_t> submit_group(std::vector<EngineRequest> group);
  // Aborts a request wherever it is; its callback gets finished/abort. Thread-safe.
  void abort(uint64_t id);
  // Blocking convenience: submits all at once, waits for all. Results in input order.
  // Checks every request first: throws seam::Error listing each bad one ("prompt 2: ...",
  // one per line) and runs none.
  std::vector<GenerateResult> generate(const std::vector<std::vector<int32_t>>& prompts,
                                       const std::vector<SamplingParams>& params);
  // A snapshot of the engine's stats. Thread-safe.
  EngineStats stats() const;
  // Blocks until no request is waiting or running and stats() reflects them all.
  void wait_idle();
  // Set once a device fault stopped the engine for good: the cause (without the
  // "engine is dead: " prefix). Thread-safe.
  std::optional<std::string> dead_cause() const;
  bool dead() const { return dead_cause().has_value(); }
  // Tensor parallelism over several nodes: on a node other than 0 (--node-rank > 0) the engine
  // takes no requests; its ranks run node 0's steps. Blocks until that ends: nullopt when node 0
  // closed the group, else the error that stopped this node (node 0 gone, a collective failed).
  std::optional<std::string> wait_follower();

 private:
  friend class EngineBenchAccess;
  std::unique_ptr<EngineCore> core_;
};

}  // namespace seam
