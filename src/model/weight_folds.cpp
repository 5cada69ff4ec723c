#include "model/weight_folds.h"

#include "core/error.h"

namespace seam {

namespace {
HostTensor as_f32(const HostTensor& w, std::vector<float>& storage) {
  storage.resize(size_t(w.numel()));
  w.to_f32(storage.data());  // a random (dummy) tensor's values are computed here
  HostTensor t = w;
  t.dtype = DType::f32;
  t.data = storage.data();
  t.random = false;
  return t;
}
}  // namespace

HostTensor fold_plus_one(const HostTensor& w, std::vector<float>& storage) {
  HostTensor t = as_f32(w, storage);
  for (float& x : storage) x += 1.f;
  return t;
}

HostTensor fold_rotary_rows(const HostTensor& w, int head_dim, int rotary_dim, float factor,
                            std::vector<float>& storage) {
  SEAM_ASSERT(w.shape.size() == 2 && w.shape[0] % head_dim == 0 && rotary_dim <= head_dim);
  HostTensor t = as_f32(w, storage);
  const int64_t cols = w.shape[1];
  for (int64_t row = 0; row < w.shape[0]; ++row) {
    if (row % head_dim >= rotary_dim) continue;  // a pass-through dim keeps its scale
    for (int64_t j = 0; j < cols; ++j) storage[size_t(row * cols + j)] *= factor;
  }
  return t;
}

}  // namespace seam
