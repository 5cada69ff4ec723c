// TpPlan: the tensor-parallel flags (--tp-size, --nnodes, --node-rank, --dist-init-addr,
// --dist-timeout), validated against each other and the model once, with the derived
// values: which ranks this machine hosts and where the group's store is.
//
// Ranks are numbered node-major: node k hosts ranks [k * ranks_per_node, (k + 1) *
// ranks_per_node), and rank r drives local device r % ranks_per_node. Rank 0 (node 0) owns the
// scheduler; node 0's process serves the store at --dist-init-addr.
#pragma once
#include <chrono>
#include <string>

#include "core/tensor.h"
#include "engine/engine_config.h"
#include "model/model_config.h"

namespace seam {

struct TpPlan {
  int tp_size = 1;
  int nnodes = 1;
  int node_rank = 0;
  int ranks_per_node = 1;
  std::string host = "127.0.0.1";  // the store's address
  int port = 0;                    // 0: node 0 picks a free port (one node only)
  std::chrono::milliseconds timeout{300000};
  bool active() const { return tp_size > 1; }
  int first_local_rank() const { return node_rank * ranks_per_node; }
};

// Throws seam::Error naming the flag: sizes that do not divide, a node rank out of range,
// several nodes without --dist-init-addr, a model that cannot be split (model/tp_shard.h),
// and what does not combine with TP yet (STANDALONE speculative decoding; the CPU backend
// without Gloo).
TpPlan resolve_tp_plan(const EngineConfig& cfg, const ModelConfig& model, Device device);

}  // namespace seam
