#include "engine/tp_plan.h"

#include "backend/backend_factory.h"
#include "backend/tcp_store.h"
#include "core/error.h"
#include "model/tp_shard.h"

namespace seam {

TpPlan resolve_tp_plan(const EngineConfig& cfg, const ModelConfig& model, Device device) {
  TpPlan p;
  SEAM_CHECK(cfg.tp_size >= 1, "--tp-size must be at least 1, got ", cfg.tp_size);
  SEAM_CHECK(cfg.nnodes >= 1, "--nnodes must be at least 1, got ", cfg.nnodes);
  SEAM_CHECK(cfg.tp_size % cfg.nnodes == 0, "--nnodes ", cfg.nnodes, " does not divide --tp-size ", cfg.tp_size,
             " (every node hosts the same number of ranks)");
  SEAM_CHECK(cfg.node_rank >= 0 && cfg.node_rank < cfg.nnodes, "--node-rank ", cfg.node_rank,
             " is outside 0..", cfg.nnodes - 1, " (--nnodes ", cfg.nnodes, ")");
  SEAM_CHECK(cfg.dist_timeout > 0, "--dist-timeout must be a positive number of seconds, got ", cfg.dist_timeout);
  p.tp_size = cfg.tp_size;
  p.nnodes = cfg.nnodes;
  p.node_rank = cfg.node_rank;
  p.ranks_per_node = cfg.tp_size / cfg.nnodes;
  p.timeout = std::chrono::seconds(cfg.dist_timeout);
  if (!cfg.dist_init_addr.empty()) {
    parse_host_port(cfg.dist_init_addr, p.host, p.port, "--dist-init-addr");
  } else {
    SEAM_CHECK(cfg.nnodes == 1, "--nnodes ", cfg.nnodes,
               " needs --dist-init-addr HOST:PORT (node 0's address, the same on every node)");
  }
  check_tp_size(model, cfg.tp_size);
  if (!p.active()) return p;
  SEAM_CHECK(cfg.speculative_algorithm != "STANDALONE" && cfg.speculative_algorithm != "standalone",
             "--speculative-algorithm STANDALONE does not run with --tp-size ", cfg.tp_size,
             " yet (the draft model is not sharded); NGRAM does");
  SEAM_CHECK(collectives_compiled(device), "--tp-size ", cfg.tp_size, " on ", device == Device::cpu ? "cpu" : "cuda",
             " needs ", device == Device::cpu ? "Gloo (libgloo-dev)" : "NCCL (nccl.h, libnccl)",
             ": this build has none (install it and reconfigure)");
  return p;
}

}  // namespace seam
