// DeviceWeight: one weight tensor on the device together with the allocation behind it.
// Uploaded once at load (never in the step loop) and released through its backend when
// the last holder goes: ownership is shared so a tied lm_head and the embedding are one
// weight, counted once.
#pragma once
#include <initializer_list>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "model/checkpoint.h"

namespace seam {

class DeviceWeight {
 public:
  DeviceWeight() = default;  // undefined: an absent optional weight (a bias, a q/k norm)

  // Concatenates `parts` along dim 0 (fused q/k/v, gate/up) in `dtype` and uploads them.
  // Parts already in `dtype` are copied as bytes; others go through float32 once; random parts
  // (--load-format dummy) are filled on the device (Backend::fill_random).
  static DeviceWeight upload(Backend& backend, const std::vector<const HostTensor*>& parts, DType dtype);
  // A float32 vector (e.g. RoPE's inverse frequencies), [values.size()].
  static DeviceWeight upload_f32(Backend& backend, const std::vector<float>& values);
  // An uninitialised weight of `shape` in `dtype`, for a load step that writes it on the device
  // (the online FP8 quantization).
  static DeviceWeight allocate(Backend& backend, DType dtype, std::initializer_list<int64_t> shape);

  const Tensor& tensor() const { return tensor_; }
  bool defined() const { return tensor_.defined(); }
  size_t bytes() const { return defined() ? tensor_.nbytes() : 0; }

 private:
  static DeviceWeight upload_random(Backend& backend, const std::vector<const HostTensor*>& parts, DType dtype,
                                    int64_t rows, int64_t cols);

  Tensor tensor_;
  std::shared_ptr<void> memory_;  // released with Backend::release by the last holder
};

}  // namespace seam
