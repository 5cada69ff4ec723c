#include "bench_serving/random_dataset.h"

#include <algorithm>
#include <random>

#include "core/error.h"

namespace seam {

std::vector<BenchRequest> make_random_dataset(const RandomDatasetSpec& s) {
  SEAM_CHECK(s.n_prompts >= 1, "--num-prompts must be >= 1, got ", s.n_prompts);
  SEAM_CHECK(s.input_len >= 1, "--random-input-len must be >= 1, got ", s.input_len);
  SEAM_CHECK(s.output_len >= 1, "--random-output-len must be >= 1, got ", s.output_len);
  SEAM_CHECK(s.range_ratio >= 0.0 && s.range_ratio <= 1.0, "--random-range-ratio must be in [0, 1], got ",
             s.range_ratio);
  SEAM_CHECK(s.vocab_size >= 1, "vocab size must be >= 1, got ", s.vocab_size);
  std::mt19937_64 rng(s.seed);
  // sglang: randint(max(int(len * ratio), 1), len + 1), i.e. [lo, len] inclusive.
  auto draw_len = [&](int len) {
    const int lo = std::max(int(double(len) * s.range_ratio), 1);
    return std::uniform_int_distribution<int>(lo, len)(rng);
  };
  std::vector<int> input_lens(size_t(s.n_prompts)), output_lens(size_t(s.n_prompts)), offsets(size_t(s.n_prompts));
  for (auto& x : input_lens) x = draw_len(s.input_len);
  for (auto& x : output_lens) x = draw_len(s.output_len);
  for (auto& x : offsets) x = std::uniform_int_distribution<int>(0, s.vocab_size - 1)(rng);
  std::vector<BenchRequest> out(size_t(s.n_prompts));
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].output_len = output_lens[i];
    out[i].prompt_ids.resize(size_t(input_lens[i]));
    for (int j = 0; j < input_lens[i]; ++j)
      out[i].prompt_ids[size_t(j)] = int32_t((int64_t(offsets[i]) + int64_t(i) + j) % s.vocab_size);
  }
  return out;
}

}  // namespace seam
