// A node other than 0 of a multi-node tensor-parallel group (--nnodes N --node-rank k > 0): the
// same `seam serve` / `generate` / `bench-one-batch` command line as node 0 but for
// --node-rank, so every node builds the same plan; it serves no HTTP and runs no requests of
// its own: its ranks step node 0's batches until node 0 closes the group.
#pragma once
#include "engine/engine_config.h"

namespace seam::cli {

// Builds this node's ranks and follows node 0. Exit status: 0 when node 0 closed the group,
// 3 when this node stopped on an error (node 0 gone, a collective failed; as `serve` on a
// dead engine, so that a supervisor restarts the node).
int run_follower_node(const EngineConfig& config);

}  // namespace seam::cli
