#include "model/linear.h"

namespace seam {

Linear Linear::load(Backend& backend, const std::vector<const HostTensor*>& weight_parts,
                    const std::vector<const HostTensor*>& bias_parts, WeightFormat format) {
  SEAM_ASSERT(!weight_parts.empty());
  for (const HostTensor* p : weight_parts)
    SEAM_ASSERT(p->shape.size() == 2, "linear weight '", p->name, "' is not a matrix");
  Linear l;
  l.backend_ = &backend;
  l.format_ = format;
  // Dense formats: the weight in the format's dtype; the backend's GEMM/GEMV dispatches on it.
  const DType dtype = weight_format_dtype(format);
  l.weight_ = DeviceWeight::upload(backend, weight_parts, dtype);
  // The bias is added in the activation dtype, which is the dense format's dtype today.
  if (!bias_parts.empty()) l.bias_ = DeviceWeight::upload(backend, bias_parts, dtype);
  return l;
}

Linear Linear::shared(Backend& backend, DeviceWeight weight, WeightFormat format) {
  SEAM_ASSERT(weight.defined() && weight.tensor().ndim == 2 && weight.tensor().dtype == weight_format_dtype(format),
              "a shared linear weight must be a matrix stored in ", weight_format_name(format));
  Linear l;
  l.backend_ = &backend;
  l.format_ = format;
  l.weight_ = std::move(weight);
  return l;
}

}  // namespace seam

