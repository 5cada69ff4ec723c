// embedding_shard: the vocabulary-parallel embedding of one tensor-parallel rank:
// out[i] = table[ids[i] - vocab_begin] when that row is this rank's, else zeros (the
// all-reduce that follows adds the one rank's row that holds it).
#pragma once
#include <cuda_runtime.h>

#include "core/tensor.h"

namespace seam::cuda {
// out [n, d] (rows may be strided), table [vocab_local, d] contiguous, ids [n] i32; one dtype.
void launch_embedding_shard(const Tensor& out, const Tensor& ids, const Tensor& table, int64_t vocab_begin,
                            cudaStream_t stream);
}
