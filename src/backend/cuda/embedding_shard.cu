#include "backend/cuda/embedding_shard.h"

#include <algorithm>

#include "backend/cuda/cuda_common.cuh"

namespace seam::cuda {

namespace {
// One block per output row, one element per thread step (once per step, at TP > 1 only).
template <typename T>
__global__ void embedding_shard_kernel(T* out, int64_t out_stride, const T* table, int64_t vocab_local,
                                       int64_t vocab_begin, const int32_t* ids, int64_t width) {
  pdl_begin();
  const int64_t i = blockIdx.x, r = int64_t(ids[i]) - vocab_begin;
  T* dst = out + i * out_stride;
  if (r < 0 || r >= vocab_local) {
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x) dst[j] = T(0.f);
    return;
  }
  const T* src = table + r * width;
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x) dst[j] = src[j];
}

template <typename T>
void launch_typed(const Tensor& out, const Tensor& ids, const Tensor& table, int64_t vocab_begin, cudaStream_t stream) {
  const int64_t width = table.size(1);
  const int threads = int(std::min<int64_t>(256, (width + 31) / 32 * 32));
  launch_kernel(embedding_shard_kernel<T>, unsigned(out.size(0)), threads, 0, stream, out.ptr<T>(), out.stride[0],
                table.ptr<T>(), table.size(0), vocab_begin, ids.ptr<int32_t>(), width);
  SEAM_CUDA_CHECK_LAUNCH();
}
}  // namespace

void launch_embedding_shard(const Tensor& out, const Tensor& ids, const Tensor& table, int64_t vocab_begin,
                            cudaStream_t stream) {
  if (out.size(0) == 0) return;
  switch (table.dtype) {
    case DType::f32: return launch_typed<float>(out, ids, table, vocab_begin, stream);
    case DType::bf16: return launch_typed<__nv_bfloat16>(out, ids, table, vocab_begin, stream);
    case DType::f16: return launch_typed<__half>(out, ids, table, vocab_begin, stream);
    default: break;
  }
  throw Error(detail::concat("embedding_shard: unsupported dtype ", dtype_name(table.dtype)));
}

}  // namespace seam::cuda
