// The "random" dataset of sglang's bench_serving: per request an input length
// and an output length drawn uniformly from [len * range_ratio, len], and
// prompt token ids (offset + i + j) % vocab_size. The ids are sent as a token
// list, so the server sees exactly the drawn input length.
#pragma once
#include <cstdint>
#include <vector>

namespace seam {

struct BenchRequest {
  std::vector<int32_t> prompt_ids;  // [input_len]
  int output_len = 0;
};

struct RandomDatasetSpec {
  int n_prompts = 1000;
  int input_len = 1024;
  int output_len = 1024;
  double range_ratio = 0.0;  // sglang's default
  int vocab_size = 32000;
  uint64_t seed = 1;
};

// Throws seam::Error for a bad spec.
std::vector<BenchRequest> make_random_dataset(const RandomDatasetSpec& spec);

}  // namespace seam
