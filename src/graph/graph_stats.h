// GraphStats: how steps ran, by path and by eager reason; what was captured.
#pragma once
#include <cstdint>
#include <map>
#include <string>

namespace seam {

struct GraphStats {
  uint64_t decode_graph_replays = 0;
  uint64_t piecewise_replays = 0;
  uint64_t piecewise_replays_extend = 0;  // of which EXTEND batches
  uint64_t piecewise_replays_mixed = 0;   // of which MIXED batches (same keys as EXTEND)
  uint64_t eager_steps = 0;
  std::map<std::string, uint64_t> eager_by_reason;
  // steps with speculative verify rows, by the path they took (also counted above)
  uint64_t verify_steps_decode_graph = 0, verify_steps_piecewise = 0, verify_steps_eager = 0;
  uint64_t padding_tokens = 0;
  int captured_decode_keys = 0;
  int captured_piecewise_keys = 0;
  uint64_t captures_after_seal = 0;  // must stay 0: capture only happens at start-up
  double decode_capture_s = 0, piecewise_capture_s = 0;
  int64_t decode_graph_bytes = 0, piecewise_graph_bytes = 0;
};

}  // namespace seam
