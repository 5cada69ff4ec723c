// TpGroup: the tensor-parallel ranks of this machine other than the engine's own, one worker
// thread each, and the store the group meets at (node 0 serves it).
//
// Threads, not processes (docs/architecture.md "Tensor parallelism"): one process per node
// holds every local rank, so the one scheduler hands a step's ForwardBatch to the workers by
// pointer (no serialization, no IPC), a rank's failure is an exception the others see, and
// one process is one unit to start, stop and supervise. Each worker owns its backend (its
// own CUDA device and stream), its model shard, KV pool and runner; no device state is shared,
// so threads cost nothing in isolation, and NCCL/Gloo connect ranks the same way whether they
// live in one process or several.
//
// A step: forward() copies the batch for the workers (the grammar mask callback replaced: only
// rank 0's sample is used, and the engine's matchers belong to its thread), wakes them, runs
// rank 0's forward on the calling thread, and waits for every worker before returning (the
// copy stays valid while they read it; a worker's error surfaces here). Every rank runs the
// same batch, so the collectives inside the model line up by construction.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "backend/tcp_store.h"
#include "engine/rank_parts.h"
#include "runtime/forward_batch.h"
#include "runtime/step_result.h"

namespace seam {

class TpGroup {
 public:
  // Node 0 starts the store (at plan.tp's address; port 0 picks a free one). Then starts one
  // worker thread per local rank except `leader_rank` (the engine's own, built by the caller
  // with build_rank_parts(plan, leader_rank, store_port())). The plan must outlive the group.
  TpGroup(const RankPlan& plan, int leader_rank);
  ~TpGroup();  // stops and joins the workers
  TpGroup(const TpGroup&) = delete;
  TpGroup& operator=(const TpGroup&) = delete;

  int store_port() const { return port_; }

  // Several nodes (engine/tp_group.cpp "step channel"): node 0's forward() also publishes each
  // batch in the store; the other nodes' engines take them with next_batch() and run them
  // through forward() on their own ranks. next_batch() waits while node 0 is idle (checking
  // `stop` every second), returns nullopt when node 0 stopped the group (its engine closed)
  // or `stop` became true, and throws when node 0's store is gone.
  std::optional<ForwardBatch> next_batch(const std::atomic<bool>& stop);

  // The leader rank's communicator, for the watchdog (the workers register their own).
  void watch(Communicator* comm);
  // Rank 0's forward on `leader`, and the same batch on every worker; rank 0's result.
  StepResult forward(const ForwardBatch& fb, ModelRunner& leader);
  // Runs job(runner) on every rank of this node at once: the leader's on the calling thread,
  // each worker's on its thread; returns when all are done, rethrowing the leader's error or,
  // as DeviceError, the first worker's (naming its rank). Benchmarks and tests drive the ranks
  // through it (engine_bench_access.h); job must make the same collective calls on every rank.
  void run_on_every_rank(const std::function<void(ModelRunner&)>& job, ModelRunner& leader);

 private:
  void worker(int rank);
  // Watchdog: a step (run_on_every_rank) that lasts longer than --dist-timeout aborts every
  // local communicator, so that ranks stuck in a collective whose peer died return with an
  // error instead of waiting forever (NCCL has no timeout of its own; Gloo's calls end anyway).
  void watchdog();

  // Step channel keys: "seam/step/<n>" holds step n's encoded batch ("" = the group stops).
  std::string step_key(uint64_t n) const { return "seam/step/" + std::to_string(n); }

  const RankPlan& plan_;
  std::unique_ptr<TcpStoreServer> server_;  // node 0 only
  std::unique_ptr<TcpStore> channel_;       // several nodes only: the step channel's connection
  uint64_t n_published_ = 0;                // node 0: steps put in the channel
  uint64_t n_received_ = 0;                 // other nodes: steps taken from it
  int port_ = 0;
  std::vector<std::thread> workers_;

  std::mutex mu_;
  std::condition_variable cv_;       // workers wait for a step (or stop)
  std::condition_variable done_cv_;  // forward() waits for the workers
  ForwardBatch worker_fb_;           // the step's batch for the workers (forward)
  std::function<void(ModelRunner&)> job_;  // what the workers run this step
  uint64_t step_ = 0;                // steps posted
  int n_done_ = 0;                   // workers done with step_
  int n_alive_ = 0;                  // workers still looping (a failed start-up leaves)
  std::string worker_error_;         // the first worker error of the step
  bool stop_ = false;
  std::vector<Communicator*> watched_;  // under mu_
  bool step_in_flight_ = false;         // under mu_
  std::chrono::steady_clock::time_point step_start_;
  std::thread watchdog_;
};

}  // namespace seam
