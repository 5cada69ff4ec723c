#include "cli/follower_node.h"

#include "core/log.h"
#include "engine/engine.h"

namespace seam::cli {

int run_follower_node(const EngineConfig& config) {
  Engine engine(config);
  const std::optional<std::string> error = engine.wait_follower();
  if (!error) return 0;
  log::error("node %d: %s", config.node_rank, error->c_str());
  return 3;
}

}  // namespace seam::cli
