#include "model/device_weight.h"

#include <cstring>

namespace seam {

namespace {
// The device allocation of `bytes`, filled from `src`, released by the last owner.
std::shared_ptr<void> upload_bytes(Backend& backend, const void* src, size_t bytes) {
  void* dev = backend.alloc(bytes);
  std::shared_ptr<void> memory(dev, [b = &backend](void* p) { b->release(p); });
  backend.copy_h2d(dev, src, bytes);
  backend.synchronize();  // the caller's staging dies at return
  return memory;
}
}  // namespace

DeviceWeight DeviceWeight::upload(Backend& backend, const std::vector<const HostTensor*>& parts, DType dtype) {
  const HostTensor& first = *parts[0];
  int64_t rows = 0;
  for (const HostTensor* p : parts) rows += p->shape.empty() ? 1 : p->shape[0];
  const int64_t cols = first.shape.size() == 2 ? first.shape[1] : 1;
  const size_t esize = dtype_size(dtype);
  bool any_random = false;
  for (const HostTensor* p : parts) any_random = any_random || p->random;
  if (any_random) return upload_random(backend, parts, dtype, rows, cols);
  std::vector<uint8_t> staged(size_t(rows * cols) * esize);
  size_t at = 0;
  std::vector<float> f32;
  for (const HostTensor* p : parts) {
    const size_t n = size_t(p->numel());
    if (p->dtype == dtype) {
      std::memcpy(staged.data() + at, p->data, n * esize);
    } else {
      f32.resize(n);
      convert_to_f32(p->data, p->dtype, f32.data(), n);
      convert_from_f32(f32.data(), dtype, staged.data() + at, n);
    }
    at += n * esize;
  }
  DeviceWeight w;
  w.memory_ = upload_bytes(backend, staged.data(), staged.size());
  w.tensor_ = first.shape.size() == 2 ? Tensor(w.memory_.get(), dtype, backend.device(), {rows, cols})
                                      : Tensor(w.memory_.get(), dtype, backend.device(), {rows});
  return w;
}

// --load-format dummy: each random part is filled on the device in its rows of the weight; a
// host part (a load-time fold of a random tensor, in float32) is copied as usual.
DeviceWeight DeviceWeight::upload_random(Backend& backend, const std::vector<const HostTensor*>& parts, DType dtype,
                                         int64_t rows, int64_t cols) {
  const size_t esize = dtype_size(dtype);
  void* dev = backend.alloc(size_t(rows * cols) * esize);
  DeviceWeight w;
  w.memory_ = std::shared_ptr<void>(dev, [b = &backend](void* p) { b->release(p); });
  w.tensor_ = parts[0]->shape.size() == 2 ? Tensor(dev, dtype, backend.device(), {rows, cols})
                                          : Tensor(dev, dtype, backend.device(), {rows});
  size_t at = 0;  // bytes
  std::vector<uint8_t> staged;
  std::vector<float> f32;
  for (const HostTensor* p : parts) {
    const int64_t n = p->numel();
    void* dst = static_cast<uint8_t*>(dev) + at;
    if (p->random) {
      backend.fill_random(Tensor(dst, dtype, backend.device(), {n}), p->fill);
    } else {
      f32.resize(size_t(n));
      p->to_f32(f32.data());
      staged.resize(size_t(n) * esize);
      convert_from_f32(f32.data(), dtype, staged.data(), size_t(n));
      backend.copy_h2d(dst, staged.data(), staged.size());
      backend.synchronize();  // `staged` is reused by the next part
    }
    at += size_t(n) * esize;
  }
  backend.synchronize();
  return w;
}

DeviceWeight DeviceWeight::allocate(Backend& backend, DType dtype, std::initializer_list<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  void* dev = backend.alloc(size_t(n) * dtype_size(dtype));
  DeviceWeight w;
  w.memory_ = std::shared_ptr<void>(dev, [b = &backend](void* p) { b->release(p); });
  w.tensor_ = Tensor(dev, dtype, backend.device(), shape);
  return w;
}

DeviceWeight DeviceWeight::upload_f32(Backend& backend, const std::vector<float>& values) {
  DeviceWeight w;
  w.memory_ = upload_bytes(backend, values.data(), values.size() * sizeof(float));
  w.tensor_ = Tensor(w.memory_.get(), DType::f32, backend.device(), {int64_t(values.size())});
  return w;
}

}  // namespace seam
