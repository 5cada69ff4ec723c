#include "backend/cuda/rms_norm.h"

#include "backend/cuda/cuda_common.cuh"

namespace seam::cuda {

namespace {

// Element offset of normalised row r in a [n, d] or [n, heads, d] view.
struct RowMap {
  int64_t s0 = 0;     // stride of dim 0
  int64_t s1 = 0;     // stride of the heads dim (= d: rows are packed)
  int64_t heads = 1;  // 1 for a 2-D view
  __device__ __forceinline__ int64_t operator()(int64_t r) const { return (r / heads) * s0 + (r % heads) * s1; }
};

RowMap row_map(const Tensor& t) {
  RowMap m;
  m.s0 = t.stride[0];
  if (t.ndim == 3) {
    m.s1 = t.stride[1];
    m.heads = t.size(1);
  }
  return m;
}

template <typename T, int V>
__device__ __forceinline__ void load_n(const T* p, float (&f)[V]) {
  if constexpr (V == 1) {
    f[0] = to_float(*p);
  } else {
    load_vec<T>(p, f);
  }
}
template <typename T, int V>
__device__ __forceinline__ void store_n(T* p, const float (&f)[V]) {
  if constexpr (V == 1) {
    *p = from_float<T>(f[0]);
  } else {
    store_vec<T>(p, f);
  }
}

// TPR threads per row: 32 (one warp, rows of up to ~1k) or the whole block (one row).
// Two passes over the row: sum of squares, then scale; the second pass re-reads the row
// (L1/L2) and each thread only touches its own elements, so out may alias x.
template <typename T, int TPR, int V>
__global__ void rms_norm_kernel(T* out, RowMap out_map, const T* x, RowMap x_map, const T* weight, int64_t n_rows,
                                int d, float eps) {
  pdl_begin();
  __shared__ float scratch[32];
  const int rows_per_block = blockDim.x / TPR;
  const int64_t row = int64_t(blockIdx.x) * rows_per_block + threadIdx.x / TPR;
  const int t = threadIdx.x % TPR;
  if (TPR == 32 && row >= n_rows) return;  // a whole warp leaves; reductions are per warp
  const T* xr = x + x_map(row);
  float ss = 0.f;
  for (int j = t * V; j < d; j += TPR * V) {
    float v[V];
    load_n<T, V>(xr + j, v);
#pragma unroll
    for (int i = 0; i < V; ++i) ss += v[i] * v[i];
  }
  ss = TPR == 32 ? warp_sum(ss) : block_sum(ss, scratch);
  const float scale = 1.f / sqrtf(ss / float(d) + eps);
  T* o = out + out_map(row);
  for (int j = t * V; j < d; j += TPR * V) {
    float v[V], w[V];
    load_n<T, V>(xr + j, v);
    load_n<T, V>(weight + j, w);
#pragma unroll
    for (int i = 0; i < V; ++i) v[i] = v[i] * scale * w[i];
    store_n<T, V>(o + j, v);
  }
}

template <typename T, int V>
void launch_rows(T* out, RowMap om, const T* x, RowMap xm, const T* w, int64_t n_rows, int d, float eps,
                 cudaStream_t stream) {
  if (n_rows == 0) return;
  // A warp per row (8 rows a block) only when there are enough rows to fill the GPU:
  // a decode step's single row of 896 on one warp took 5.1 us, a block per row 2-3 us.
  if (d <= 1024 && n_rows >= 1024) {  // a warp per row, 8 rows per block
    launch_kernel(rms_norm_kernel<T, 32, V>, div_up(n_rows, 8), 256, 0, stream, out, om, x, xm, w, n_rows, d, eps);
  } else {  // a block per row
    launch_kernel(rms_norm_kernel<T, 256, V>, unsigned(n_rows), 256, 0, stream, out, om, x, xm, w, n_rows, d, eps);
  }
  SEAM_CUDA_CHECK_LAUNCH();
}

template <typename T>
void dispatch(const Tensor& out, const Tensor& x, const Tensor& weight, float eps, cudaStream_t stream) {
  const int d = int(x.size(-1));
  const RowMap om = row_map(out), xm = row_map(x);
  // Vectors need every row start 16-byte aligned: base pointers, dim-0 strides and (3-D) head strides.
  auto vec_ok = [&](const Tensor& t) {
    return rows_vectorizable(t, d) && (t.ndim == 2 || t.stride[1] % kVec<T> == 0);
  };
  const bool vec = vec_ok(out) && vec_ok(x) && aligned16(weight.data);
  const int64_t n_rows = x.ndim == 3 ? x.size(0) * x.size(1) : x.size(0);
  if (vec)
    launch_rows<T, kVec<T>>(out.ptr<T>(), om, x.ptr<T>(), xm, weight.ptr<T>(), n_rows, d, eps, stream);
  else
    launch_rows<T, 1>(out.ptr<T>(), om, x.ptr<T>(), xm, weight.ptr<T>(), n_rows, d, eps, stream);
}

}  // namespace

void launch_rms_norm(const Tensor& out, const Tensor& x, const Tensor& weight, float eps, cudaStream_t stream) {
  SEAM_DISPATCH_FLOAT_TYPES(x.dtype, T, "rms_norm", [&] { dispatch<T>(out, x, weight, eps, stream); });
}

}  // namespace seam::cuda
