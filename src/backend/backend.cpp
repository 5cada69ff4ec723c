// The Backend interface's out-of-line parts: the checks its default (composed) ops share with
// the backends' own implementations.
#include "backend/backend.h"

#include "backend/communicator.h"
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

// A backend without its own collectives: none (the CPU and CUDA backends override both).
void Backend::all_reduce_sum(Tensor) {
  throw Error(detail::concat("the ", name(), " backend has no tensor-parallel collectives"));
}

void Backend::all_gather_cols(Tensor, Tensor, Tensor) {
  throw Error(detail::concat("the ", name(), " backend has no tensor-parallel collectives"));
}

void Backend::embedding_shard(Tensor, Tensor, Tensor, int64_t) {
  throw Error(detail::concat("the ", name(), " backend has no vocabulary-parallel embedding"));
}

}  // namespace seam
