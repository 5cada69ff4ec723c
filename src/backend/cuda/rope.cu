#include "backend/cuda/rope.h"

#include "backend/cuda/cuda_common.cuh"

namespace seam::cuda {

namespace {

template <typename T, int P>
struct alignas(P * sizeof(T)) Pack {
  T v[P];
};

// One block per token. cos/sin of the token's angles are computed once into shared
// memory (d/2 values), then every (head, pair-group) of q and k is rotated; each
// thread handles P consecutive i (and their partners i + d/2).
template <typename T, int P>
__global__ void rope_kernel(T* q, int64_t q_stride, int n_heads, T* k, int64_t k_stride, int n_kv_heads,
                            const int32_t* positions, const float* inv_freq, int d) {
  extern __shared__ float cs[];  // [2, d/2]: cos then sin
  const int half = d / 2;
  const int64_t tok = blockIdx.x;
  const float pos = float(positions[tok]);
  for (int j = threadIdx.x; j < half; j += blockDim.x) {
    float s, c;
    sincosf(pos * inv_freq[j], &s, &c);
    cs[j] = c;
    cs[half + j] = s;
  }
  __syncthreads();
  const int groups = half / P;
  const int n_items = (n_heads + n_kv_heads) * groups;
  for (int it = threadIdx.x; it < n_items; it += blockDim.x) {
    const int h = it / groups, j = (it % groups) * P;
    T* v = h < n_heads ? q + tok * q_stride + int64_t(h) * d : k + tok * k_stride + int64_t(h - n_heads) * d;
    Pack<T, P> a = *reinterpret_cast<const Pack<T, P>*>(v + j);
    Pack<T, P> b = *reinterpret_cast<const Pack<T, P>*>(v + j + half);
#pragma unroll
    for (int i = 0; i < P; ++i) {
      const float x = to_float(a.v[i]), y = to_float(b.v[i]);
      const float c = cs[j + i], s = cs[half + j + i];
      a.v[i] = from_float<T>(x * c - y * s);
      b.v[i] = from_float<T>(y * c + x * s);
    }
    *reinterpret_cast<Pack<T, P>*>(v + j) = a;
    *reinterpret_cast<Pack<T, P>*>(v + j + half) = b;
  }
}

template <typename T>
void launch_typed(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor& inv_freq,
                  cudaStream_t stream) {
  const int d = int(q.size(2)), half = d / 2;
  const int n_items = int((q.size(1) + k.size(1)) * half);
  const int threads = std::min(256, (n_items / 2 + 31) / 32 * 32 + 32);
  const size_t smem = size_t(d) * sizeof(float);
  // Pairs of elements need an even half and every head start aligned to two elements.
  const auto even = [](const Tensor& t) {
    return (reinterpret_cast<uintptr_t>(t.data) % (2 * sizeof(T))) == 0 && t.stride[0] % 2 == 0;
  };
  if (half % 2 == 0 && even(q) && even(k))
    rope_kernel<T, 2><<<unsigned(q.size(0)), threads, smem, stream>>>(
        q.ptr<T>(), q.stride[0], int(q.size(1)), k.ptr<T>(), k.stride[0], int(k.size(1)), positions.ptr<int32_t>(),
        inv_freq.ptr<float>(), d);
  else
    rope_kernel<T, 1><<<unsigned(q.size(0)), threads, smem, stream>>>(
        q.ptr<T>(), q.stride[0], int(q.size(1)), k.ptr<T>(), k.stride[0], int(k.size(1)), positions.ptr<int32_t>(),
        inv_freq.ptr<float>(), d);
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_rope(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor& inv_freq,
                 cudaStream_t stream) {
  if (q.size(0) == 0) return;
  SEAM_DISPATCH_FLOAT_TYPES(q.dtype, T, "rope", [&] { launch_typed<T>(q, k, positions, inv_freq, stream); });
}

}  // namespace seam::cuda
