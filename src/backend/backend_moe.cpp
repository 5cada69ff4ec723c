// The mixture-of-experts ops' defaults: a backend that has not implemented them refuses
// with a message naming the op (at start-up: the warm-up step before graph capture runs them).
#include "backend/backend.h"

namespace seam {

void Backend::moe_route(Tensor, Tensor, Tensor, bool) {
  throw Error(detail::concat("moe_route is not implemented on the ", name(), " backend"));
}

void Backend::moe_experts(Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, const MoeScratch&) {
  throw Error(detail::concat("moe_experts is not implemented on the ", name(), " backend"));
}

void Backend::moe_shared_expert_add(Tensor, Tensor, Tensor) {
  throw Error(detail::concat("moe_shared_expert_add is not implemented on the ", name(), " backend"));
}

}  // namespace seam
