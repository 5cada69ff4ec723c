// EngineRequest: one generation request as a caller hands it to the engine
// (Engine::submit_group admits a group of them all at once, or none).
#pragma once
#include <cstdint>
#include <vector>

#include "api/request_output.h"
#include "api/sampling_params.h"

namespace seam {

struct EngineRequest {
  std::vector<int32_t> prompt_ids;
  SamplingParams params;
  StreamCallback callback;
};

}  // namespace seam
