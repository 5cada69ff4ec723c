// Communicator: the collectives of tensor parallelism (DESIGN.md "Parallelism"), one concept
// over two engines: Gloo for the CPU backend (backend/cpu/gloo_communicator.h), NCCL for the
// CUDA backend (backend/cuda/nccl_communicator.h). A rank holds one; every rank of a group
// calls the same collectives in the same order (the one scheduler makes every rank run the
// same batch, so the model's calls line up by construction).
//
// Two kinds of call:
//   * device collectives (all_reduce_sum, all_gather_rows) act on the backend's tensors and are
//     issued by Backend::all_reduce_sum / all_gather_cols as ops of the step, so a captured
//     graph records them (CPU: in its op list; CUDA: NCCL on the capturing stream);
//   * host collectives (broadcast_bytes, all_gather_bytes, barrier) act on host memory, eagerly,
//     for start-up agreement (the KV pool size, who failed) and never inside a graph; they go
//     through the group's TcpStore (backend/tcp_store.h), the same for both engines.
//
// Errors: every failure throws seam::Error whose message names this rank ("tp rank 1/2: ..."),
// and no call waits forever: each engine is given `timeout` (Gloo's context timeout, NCCL's
// watchdog-free blocking wait on the bootstrap store).
#pragma once
#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "backend/tcp_store.h"
#include "core/tensor.h"

namespace seam {

// How a group of ranks finds itself: rank r of n, and the TCP address of the store that rank
// 0 serves (--dist-init-addr HOST:PORT). The same on one machine and across machines.
struct DistInit {
  int rank = 0;
  int size = 1;
  std::string host = "127.0.0.1";
  int port = 0;
  std::string prefix = "seam";  // namespaces the store's keys (several groups on one store)
  std::chrono::milliseconds timeout{60000};  // rendezvous and every collective
};

class Communicator {
 public:
  Communicator(TcpStore& store, const DistInit& init) : store_(store), init_(init) {}
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  int rank() const { return init_.rank; }
  int size() const { return init_.size; }
  const DistInit& init() const { return init_; }
  TcpStore& store() { return store_; }

  // Device collectives, on the backend's stream (or host memory for the CPU backend).
  // x += the other ranks' x, elementwise, in place; any float dtype the engine supports.
  virtual void all_reduce_sum(Tensor x) = 0;
  // out[r * in.numel() ...] = rank r's `in`, for r in [0, size): contiguous, rank-major.
  virtual void all_gather(Tensor out, Tensor in) = 0;

  // Makes every pending and later device collective of this rank fail instead of waiting:
  // the watchdog's last resort when a step outlives the timeout (a peer died inside a
  // collective). NCCL: ncclCommAbort, callable from another thread while a collective waits;
  // Gloo: nothing (its every call already ends at the timeout). The rank is unusable after it.
  virtual void abort() {}

  // Host collectives (eager, start-up and control only), through the store.
  // `data` of rank `root` is copied to every rank; every rank passes the same size.
  void broadcast_bytes(void* data, size_t n_bytes, int root);
  // Every rank's `mine` (any size), in rank order.
  std::vector<std::string> all_gather_bytes(const std::string& mine);
  void barrier() { all_gather_bytes(""); }

  // "tp rank r/n" for messages and log lines.
  std::string label() const { return "tp rank " + std::to_string(rank()) + "/" + std::to_string(size()); }

 private:
  // The next host collective's key: every rank issues them in the same order.
  std::string next_key(const char* what);

  TcpStore& store_;
  DistInit init_;
  uint64_t n_host_calls_ = 0;
};

}  // namespace seam
