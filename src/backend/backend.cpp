// The Backend interface's out-of-line parts: the checks its default (composed) ops share with
// the backends' own implementations.
#include "backend/backend.h"

#include "backend/op_checks.h"

namespace seam {

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::silu: return "silu";
    case Activation::gelu_tanh: return "gelu_tanh";
  }
  return "unknown";
}

void Backend::check_rms_norm_qkv_rope_store(const Tensor& qkv, const Tensor& normed, const Tensor& x,
                                            const Tensor& norm_weight, const Tensor& w_qkv, const Tensor& b_qkv,
                                            const RopeStoreArgs& r) const {
  op_checks::rms_norm_qkv_rope_store(qkv, normed, x, norm_weight, w_qkv, b_qkv, r, device());
}

}  // namespace seam
