// KvCacheView: the model's view of the paged KV cache: each layer's K and V planes,
// [n_slots, n_kv_heads, head_dim]. The runtime builds it once from the KV pool (kv/),
// which the model does not include; the addresses are fixed, so graphs may bake them.
#pragma once
#include <vector>

#include "core/tensor.h"

namespace seam {

struct KvCacheView {
  std::vector<Tensor> k;  // [n_layers] of [n_slots, n_kv_heads, head_dim]
  std::vector<Tensor> v;  // [n_layers] of [n_slots, n_kv_heads, head_dim]
};

}  // namespace seam
