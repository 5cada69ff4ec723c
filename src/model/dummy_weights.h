// DummyWeights: the random tensors of --load-format dummy (vLLM's flag: a model built from
// config.json alone, for benchmarks at shapes whose checkpoints do not fit the disk). Checkpoint::
// dummy asks it for each tensor by the name and shape a real checkpoint would have; the tensor is
// a description (HostTensor::random) that the backend fills on the device (Backend::fill_random).
//
// Values: seeded by the tensor's name (FNV-1a), so two loads give the same weights and a
// tensor's values do not depend on which others the config asks for. The ranges are chosen so
// the forward pass behaves like a trained model's where a benchmark can see it, not vLLM's
// uniform ±1e-3 (with norm weights of 1e-3 the normed activations are ~1e-3 and the router's
// logits ~1e-5, so in bf16 many tie and the lower expert ids win: a batch would hit fewer experts
// than real routing does and read fewer weight bytes):
//   * a matrix [rows, cols]: uniform ±sqrt(3 / cols), standard deviation 1 / sqrt(cols), so a
//     projection of unit-variance activations stays unit variance (transformers initialises
//     with std 0.02, the same at hidden 2,500); router logits are then ~N(0, 1) per expert:
//     spread routing, distinct top-k;
//   * an RMSNorm weight: 1 ± 0.1 (Gemma's stored w, folded to 1 + w at load: ± 0.1);
//   * a bias: ± 0.02.
// Nothing is constant (constant weights draw less power and would flatter a kernel).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/model_config.h"

namespace seam {

class DummyWeights {
 public:
  explicit DummyWeights(const ModelConfig& c);
  // The random tensor `name` of `shape` (1-D: a norm weight if the name has "norm", else a bias).
  HostTensor tensor(const std::string& name, const std::vector<int64_t>& shape) const;

 private:
  float norm_offset_;  // 1, or 0 where the checkpoint stores w of (1 + w) (Gemma)
};

}  // namespace seam
