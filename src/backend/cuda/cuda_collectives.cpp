// The CUDA backend's tensor-parallel collectives: the communicator (NCCL, nccl_communicator.h)
// enqueues on this backend's stream, so inside a capture they become graph nodes like the
// kernels around them (every rank captures and replays the same graphs in the same order).
#include "backend/communicator.h"
#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/embedding_shard.h"
#include "backend/op_checks.h"

namespace seam::cuda {

void CudaBackend::all_reduce_sum(Tensor x) {
  SEAM_ASSERT(comm_, "all_reduce_sum without a communicator");
  comm_->all_reduce_sum(x);
}

void CudaBackend::all_gather_cols(Tensor out, Tensor in, Tensor scratch) {
  SEAM_ASSERT(comm_, "all_gather_cols without a communicator");
  const int64_t n = in.size(0), c = in.size(1), n_ranks = comm_->size();
  op_checks::all_gather_cols(out, in, scratch, n_ranks);
  // One row (batch-1 decode): rank-major order is already column order.
  if (n == 1) return comm_->all_gather(out.view({n_ranks * c}), in.view({c}));
  Tensor gathered(scratch.data, scratch.dtype, scratch.device, {n_ranks, n, c});
  comm_->all_gather(gathered, in);
  // [ranks, n, c] -> [n, ranks * c]: one strided 2-D copy per rank (capturable, on the stream).
  const size_t es = dtype_size(out.dtype), width = size_t(c) * es;
  for (int64_t r = 0; r < n_ranks; ++r)
    SEAM_CUDA_CHECK(cudaMemcpy2DAsync(static_cast<char*>(out.data) + size_t(r) * width, size_t(n_ranks) * width,
                                      static_cast<const char*>(gathered.data) + size_t(r * n) * width, width, width,
                                      size_t(n), cudaMemcpyDeviceToDevice, stream_));
}

void CudaBackend::embedding_shard(Tensor out, Tensor ids, Tensor table, int64_t vocab_begin) {
  op_checks::embedding(out, ids, table, Device::cuda);
  SEAM_CHECK(table.contiguous(), "embedding_shard: the table must be contiguous");
  launch_embedding_shard(out, ids, table, vocab_begin, stream_);
}

}  // namespace seam::cuda
