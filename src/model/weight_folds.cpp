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
  scale_periodic_rows(storage.data(), w.shape[0], w.shape[1], head_dim, rotary_dim, factor);
  return t;
}

void scale_periodic_rows(float* rows, int64_t n_rows, int64_t cols, int64_t period, int64_t count, float factor) {
  SEAM_ASSERT(period > 0 && count <= period);
  for (int64_t row = 0; row < n_rows; ++row) {
    if (row % period >= count) continue;  // a pass-through dim keeps its scale
    for (int64_t j = 0; j < cols; ++j) rows[row * cols + j] *= factor;
  }
}

}  // namespace seam
