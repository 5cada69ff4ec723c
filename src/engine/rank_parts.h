// RankParts: one tensor-parallel rank's device state (backend, communicator, model shard, KV
// pool, runner with its captured graphs), and build_rank_parts, the one start-up path every
// rank takes: rank 0 on the engine's constructing thread, the others on their worker threads
// (engine/tp_group.h) or, on another node, in that node's process. TP 1 takes it too, with no
// communicator: it builds exactly what a single-rank engine always built.
//
// Start-up agreement: each phase that can fail (loading the shard; sizing the KV pool and
// capturing the graphs) ends with every rank telling every other whether it succeeded
// (Communicator::all_gather_bytes over the store). A failure on any rank makes every rank
// throw the same seam::Error naming the failed rank and its message, so nobody waits for a
// rank that will never arrive; a rank that never reaches the agreement makes the others time
// out (--dist-timeout) with an error that says so.
#pragma once
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/communicator.h"
#include "backend/tcp_store.h"
#include "engine/engine_config.h"
#include "engine/engine_setup.h"
#include "engine/tp_plan.h"
#include "kv/kv_pool.h"
#include "model/checkpoint.h"
#include "model/llama_model.h"
#include "runtime/model_runner.h"

namespace seam {

// What every rank builds alike (computed once per process from the same flags and model).
struct RankPlan {
  const EngineConfig* cfg = nullptr;
  const ModelConfig* model = nullptr;  // the whole model's config (each rank shards it)
  const Checkpoint* checkpoint = nullptr;
  ResolvedSetup setup;
  TpPlan tp;
  StepBufferSizes sizes;
  KvPoolShape kv_shape;  // n_kv_heads of the whole model; n_slots decided at start-up
};

struct RankParts {
  int rank = 0;
  std::unique_ptr<TcpStore> store;  // this rank's connection to the group's store (TP only)
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Communicator> comm;  // null for TP 1
  std::unique_ptr<LlamaModel> model;
  std::unique_ptr<KvPool> kv;
  std::unique_ptr<ModelRunner> runner;
  // Every rank's memory after start-up, by rank (gathered; TP 1: this rank's): /metrics.
  struct Memory {
    uint64_t weight_bytes = 0, kv_bytes = 0, graph_bytes = 0;
  };
  std::vector<Memory> group_memory;
  RankParts() = default;
  RankParts(RankParts&&) = default;
  RankParts& operator=(RankParts&&) = default;
  // The runner and the pool refer to the model and the backend: released in reverse order.
  ~RankParts();
};

// Builds rank `rank`'s parts. `store_port` is the group store's port (TP only). Throws on
// every rank when any rank fails (see above). SEAM_TP_FAULT_RANK=r makes rank r fail while
// loading its shard (tests: the others must stop with its error).
RankParts build_rank_parts(const RankPlan& plan, int rank, int store_port);

}  // namespace seam
