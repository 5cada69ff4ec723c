// One request of a --prompts-file line: {"prompt" | "input_ids", sampling fields}.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/sampling_params.h"

namespace seam::cli {

struct RequestSpec {
  std::string prompt;
  std::vector<int32_t> input_ids;
  bool has_ids = false;
  SamplingParams params;
};

// Throws seam::Error naming `where` and the bad field.
RequestSpec parse_request_line(const std::string& line, const SamplingParams& defaults, const std::string& where);
// Reads the OpenAI/sglang sampling fields of `j` over `p`; throws seam::Error naming the field.
void read_sampling_fields(const nlohmann::json& j, SamplingParams& p, const std::string& where);

}  // namespace seam::cli
