#include "model/dummy_weights.h"

#include <cmath>

namespace seam {

namespace {
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ull;
  return h;
}
}  // namespace

DummyWeights::DummyWeights(const ModelConfig& c) : norm_offset_(c.gemma_norms ? 0.f : 1.f) {}

HostTensor DummyWeights::tensor(const std::string& name, const std::vector<int64_t>& shape) const {
  HostTensor t;
  t.name = name;
  t.dtype = DType::f32;
  t.shape = shape;
  t.random = true;
  t.fill.seed = fnv1a(name);
  if (shape.size() >= 2) {
    t.fill.scale = std::sqrt(3.f / float(shape.back()));
  } else if (name.find("norm") != std::string::npos) {
    t.fill.scale = 0.1f;
    t.fill.offset = norm_offset_;
  } else {
    t.fill.scale = 0.02f;
  }
  return t;
}

}  // namespace seam
