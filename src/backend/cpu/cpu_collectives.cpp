// The CPU backend's tensor-parallel collectives: the communicator's calls wrapped as ops, so
// a CPU capture records them like any kernel and a replay runs them again (every rank
// replays the same graphs in the same order, so the collectives still line up).
#include <algorithm>
#include <cstring>

#include "backend/communicator.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/op_checks.h"

namespace seam {

void CpuBackend::all_reduce_sum(Tensor x) {
  SEAM_ASSERT(comm_, "all_reduce_sum without a communicator");
  SEAM_CHECK(x.contiguous(), "all_reduce_sum: tensor must be contiguous");
  Communicator* comm = comm_;
  launch([=] { comm->all_reduce_sum(x); });
}

void CpuBackend::all_gather_cols(Tensor out, Tensor in, Tensor scratch) {
  SEAM_ASSERT(comm_, "all_gather_cols without a communicator");
  const int64_t n = in.size(0), c = in.size(1), n_ranks = comm_->size();
  op_checks::all_gather_cols(out, in, scratch, n_ranks);
  Communicator* comm = comm_;
  launch([=] {
    if (n == 1) return comm->all_gather(out.view({n_ranks * c}), in.view({c}));  // rank-major is column order
    Tensor gathered(scratch.data, scratch.dtype, scratch.device, {n_ranks, n, c});
    comm->all_gather(gathered, in);
    const size_t row_bytes = size_t(c) * dtype_size(out.dtype);
    for (int64_t r = 0; r < n_ranks; ++r)
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(static_cast<char*>(out.data) + (i * n_ranks * c + r * c) * int64_t(dtype_size(out.dtype)),
                    static_cast<const char*>(gathered.data) + (r * n + i) * int64_t(row_bytes), row_bytes);
  });
}

void CpuBackend::embedding_shard(Tensor out, Tensor ids, Tensor table, int64_t vocab_begin) {
  op_checks::embedding(out, ids, table, Device::cpu);
  SEAM_CHECK(table.dtype == DType::f32 && table.contiguous(), "embedding_shard: a contiguous float32 table");
  launch([=] {
    const int64_t n = out.size(0), h = out.size(1), vocab_local = table.size(0);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t r = int64_t(ids.ptr<int32_t>()[i]) - vocab_begin;
      float* dst = out.ptr<float>() + i * out.stride[0];
      if (r < 0 || r >= vocab_local)
        std::fill_n(dst, h, 0.f);  // another rank's row (or a padded row's garbage id)
      else
        std::memcpy(dst, table.ptr<float>() + r * h, size_t(h) * 4);
    }
  });
}

}  // namespace seam
