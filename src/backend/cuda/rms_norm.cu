#include "backend/cuda/rms_norm.h"

#include <type_traits>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/diagnostic_switch.h"

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

// The register form (RmsNormKernel::rows_in_registers): a warp a row, lane l holding the row's
// 16-byte vectors l, l + 32, ... (up to NV of them) in registers. Why: the block-a-row kernel
// above keeps one 16-byte vector a thread in flight, waits on a block reduction (two barriers)
// and then reads its vector again, so at prefill sizes a block spends most of its life with no
// load outstanding (the twenty-eighth pass's trace: ~18 us a norm at 4,096 x 2,048 against
// ~8.4 us of bytes). Here all of a row's loads are issued at once (a warp holds d * sizeof(T)
// bytes: 4 KB at d 2,048 bf16), the sum is one warp_sum, and the row is not read twice. The sum
// of squares adds each lane's values in vector order, then the butterfly: not the block kernel's
// order, so the two forms agree to float rounding, not bit for bit.
template <typename T, int NV>
__global__ void __launch_bounds__(256) rms_norm_rows_kernel(T* out, RowMap out_map, const T* x, RowMap x_map,
                                                            const T* weight, int64_t n_rows, int d, float eps) {
  pdl_begin();
  constexpr int V = kVec<T>;
  const int lane = int(threadIdx.x & 31);
  const int64_t row = int64_t(blockIdx.x) * 8 + (threadIdx.x >> 5);
  if (row >= n_rows) return;  // warp-uniform; no block barrier
  const T* xr = x + x_map(row);
  uint4 raw[NV];
#pragma unroll
  for (int i = 0; i < NV; ++i) {
    const int j = (lane + 32 * i) * V;
    if (j < d) raw[i] = *reinterpret_cast<const uint4*>(xr + j);
  }
  float ss = 0.f;
#pragma unroll
  for (int i = 0; i < NV; ++i) {
    if ((lane + 32 * i) * V >= d) continue;
    const T* e = reinterpret_cast<const T*>(&raw[i]);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const float f = to_float(e[k]);
      ss += f * f;
    }
  }
  ss = warp_sum(ss);
  const float scale = 1.f / sqrtf(ss / float(d) + eps);
  T* o = out + out_map(row);
#pragma unroll
  for (int i = 0; i < NV; ++i) {
    const int j = (lane + 32 * i) * V;
    if (j >= d) continue;
    const T* e = reinterpret_cast<const T*>(&raw[i]);
    float v[V], w[V];
    load_vec<T>(weight + j, w);
#pragma unroll
    for (int k = 0; k < V; ++k) v[k] = to_float(e[k]) * scale * w[k];
    store_vec<T>(o + j, v);
  }
}

// Vectors a lane the register form needs for rows of d (a power of two up to 8), or 0: the row
// is too wide for it (past 8 x 32 vectors, 4 KB: 2,048 bf16, 1,024 f32; at 16, ptxas gave the
// bf16 instance 149 registers, or spills under a 3-blocks-an-SM bound).
template <typename T>
int rows_kernel_vectors(int64_t d) {
  const int64_t per_lane = (d + 32 * kVec<T> - 1) / (32 * kVec<T>);
  for (int nv = 1; nv <= 8; nv *= 2)
    if (per_lane <= nv) return nv;
  return 0;
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

// Whether 16-byte vectors reach every row: base pointers, dim-0 strides and (3-D) head strides
// 16-byte aligned for out and x, and the weight's base.
template <typename T>
bool rows_vectorizable_all(const Tensor& out, const Tensor& x, const Tensor& weight) {
  const int64_t d = x.size(-1);
  auto vec_ok = [&](const Tensor& t) {
    return rows_vectorizable(t, d) && (t.ndim == 2 || t.stride[1] % kVec<T> == 0);
  };
  return vec_ok(out) && vec_ok(x) && aligned16(weight.data);
}

template <typename T>
void dispatch(const Tensor& out, const Tensor& x, const Tensor& weight, float eps, cudaStream_t stream,
              RmsNormKernel kernel) {
  const int d = int(x.size(-1));
  const RowMap om = row_map(out), xm = row_map(x);
  const bool vec = rows_vectorizable_all<T>(out, x, weight);
  const int64_t n_rows = x.ndim == 3 ? x.size(0) * x.size(1) : x.size(0);
  const int nv = rows_kernel_vectors<T>(d);
  const bool registers = kernel == RmsNormKernel::rows_in_registers ||
                         (kernel == RmsNormKernel::by_rows && n_rows >= kRmsNormRegisterRows);
  if (registers && vec && nv > 0 && n_rows > 0) {
    auto go = [&](auto n) {
      launch_kernel(rms_norm_rows_kernel<T, decltype(n)::value>, div_up(n_rows, 8), 256, 0, stream, out.ptr<T>(), om,
                    x.ptr<T>(), xm, weight.ptr<T>(), n_rows, d, eps);
    };
    switch (nv) {
      case 1: go(std::integral_constant<int, 1>{}); break;
      case 2: go(std::integral_constant<int, 2>{}); break;
      case 4: go(std::integral_constant<int, 4>{}); break;
      default: go(std::integral_constant<int, 8>{}); break;
    }
    SEAM_CUDA_CHECK_LAUNCH();
    return;
  }
  if (vec)
    launch_rows<T, kVec<T>>(out.ptr<T>(), om, x.ptr<T>(), xm, weight.ptr<T>(), n_rows, d, eps, stream);
  else
    launch_rows<T, 1>(out.ptr<T>(), om, x.ptr<T>(), xm, weight.ptr<T>(), n_rows, d, eps, stream);
}

}  // namespace

RmsNormKernel rms_norm_kernel_default() {
  // 0: by_size, 1: rows_in_registers where it applies, 2: by_rows (the default; rms_norm.h).
  static const int v = env_choice("SEAM_RMS_NORM_KERNEL", 2, {0, 1, 2});
  return v == 0 ? RmsNormKernel::by_size : v == 1 ? RmsNormKernel::rows_in_registers : RmsNormKernel::by_rows;
}

bool rms_norm_rows_applies(const Tensor& out, const Tensor& x, const Tensor& weight) {
  bool ok = false;
  SEAM_DISPATCH_FLOAT_TYPES(x.dtype, T, "rms_norm", [&] {
    ok = rows_vectorizable_all<T>(out, x, weight) && rows_kernel_vectors<T>(x.size(-1)) > 0;
  });
  return ok;
}

void launch_rms_norm(const Tensor& out, const Tensor& x, const Tensor& weight, float eps, cudaStream_t stream,
                     RmsNormKernel kernel) {
  SEAM_DISPATCH_FLOAT_TYPES(x.dtype, T, "rms_norm", [&] { dispatch<T>(out, x, weight, eps, stream, kernel); });
}

}  // namespace seam::cuda
