// ModelInfo: the few facts about the served model that callers of the engine
// need (the server's checks and /v1/models, the CLI), without the model's
// internals (ModelConfig stays behind the engine).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace seam {

struct ModelInfo {
  std::string architecture;            // e.g. "LlamaForCausalLM"
  int vocab_size = 0;
  std::vector<int32_t> eos_token_ids;  // generation ends at these unless ignore_eos
  int max_context = 0;                 // prompt + output tokens the engine serves
};

}  // namespace seam
