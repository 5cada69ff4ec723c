// ForwardBatch <-> bytes: how node 0 hands a step's batch to the tensor-parallel ranks of the
// other nodes (engine/tp_group.h: through the group's store). Every field that reaches the
// device travels; fill_mask (a host callback into node 0's grammar matchers) cannot: a decoded
// batch's fill_mask allows every token, which is right because only rank 0's sample is used
// (the masks change sampling, never the KV cache or the collectives).
#pragma once
#include <string>

#include "runtime/forward_batch.h"

namespace seam {

std::string encode_forward_batch(const ForwardBatch& fb);
// Throws seam::Error on bytes encode_forward_batch did not produce (truncated, wrong version).
ForwardBatch decode_forward_batch(const std::string& bytes);

}  // namespace seam
