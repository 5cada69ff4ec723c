// Device helpers shared by the CUDA kernels: element conversion, 16-byte vector
// access, dtype dispatch, block reductions. Included by .cu files only.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <utility>

#include "backend/cuda/cuda_check.h"
#include "core/tensor.h"

namespace seam::cuda {

// ---- scalar conversion (all arithmetic is float32) ----
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// ---- 16-byte vectors: kVec<T> elements per aligned 16-byte access ----
template <typename T>
constexpr int kVec = 16 / int(sizeof(T));

// A 16-byte vector's kVec<T> values as floats, and floats rounded to T packed into one.
template <typename T>
__device__ __forceinline__ void unpack_vec(const uint4& raw, float (&f)[kVec<T>]) {
  const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
  for (int i = 0; i < kVec<T>; ++i) f[i] = to_float(e[i]);
}
template <typename T>
__device__ __forceinline__ uint4 pack_vec(const float (&f)[kVec<T>]) {
  uint4 raw;
  T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
  for (int i = 0; i < kVec<T>; ++i) e[i] = from_float<T>(f[i]);
  return raw;
}

template <typename T>
__device__ __forceinline__ void load_vec(const T* p, float (&f)[kVec<T>]) {
  unpack_vec<T>(*reinterpret_cast<const uint4*>(p), f);
}

template <typename T>
__device__ __forceinline__ void store_vec(T* p, const float (&f)[kVec<T>]) {
  *reinterpret_cast<uint4*>(p) = pack_vec<T>(f);
}

// ---- reductions ----
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Reduction over the block (blockDim.x a multiple of 32, at most 1024) with a warp
// reduction and its identity; every thread gets the result. `scratch` holds 32 floats.
// Fixed reduction order: deterministic.
template <float (*WarpReduce)(float)>
__device__ __forceinline__ float block_reduce(float v, float* scratch, float identity) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
  v = WarpReduce(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < n_warps ? scratch[lane] : identity;
  return WarpReduce(v);
}
__device__ __forceinline__ float block_sum(float v, float* scratch) { return block_reduce<warp_sum>(v, scratch, 0.f); }
__device__ __forceinline__ float block_max(float v, float* scratch) {
  return block_reduce<warp_max>(v, scratch, -INFINITY);
}

// ---- streamed weights ----
// A 16-byte load of data read once per step (weights of the GEMV and skinny GEMM kernels): it
// does not allocate in L1, so what the kernel reuses (x, read by every warp) stays there.
__device__ __forceinline__ uint4 load_stream(const uint4* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

// ---- programmatic dependent launch (PDL) ----
// Every seam kernel starts with pdl_begin() and is launched with launch_kernel(). The
// launch lets a kernel be scheduled while the one before it on the stream is still
// running; pdl_begin() then makes it wait until that kernel has completed and its
// writes are visible (griddepcontrol.wait), and only after that lets the next kernel be
// scheduled (griddepcontrol.launch_dependents). So no kernel reads or writes memory
// before its predecessor is done — the same order as plain stream order — while the
// launch latency and block scheduling of each kernel overlap the one before. Inside a
// CUDA graph this becomes a programmatic edge: a decode step has ~10 dependent kernels a
// layer, and the gaps between them are a visible part of a small model's step. Kernels
// of other libraries (cuBLASLt) are ordinary stream-ordered launches; the wait is a
// no-op when a kernel was launched without the attribute.
__device__ __forceinline__ void pdl_begin() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// False when SEAM_CUDA_PDL=0 (a diagnostic switch to measure what PDL gains) or the
// device is older than sm_90.
bool pdl_enabled();

// The launch both helpers below make: PDL where enabled, and clusters of cluster_x CTAs along x
// where cluster_x > 0 (0: no cluster attribute). Call those, not this.
template <typename... Params, typename... Args>
void launch_kernel_ex(unsigned cluster_x, void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem,
                      cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[2];
  unsigned n = 0;
  if (pdl_enabled()) {
    attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (cluster_x > 0) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = cluster_x;
    attr[n].val.clusterDim.y = attr[n].val.clusterDim.z = 1;
    ++n;
  }
  cfg.attrs = attr;
  cfg.numAttrs = n;
  SEAM_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

template <typename... Params, typename... Args>
void launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, Args&&... args) {
  launch_kernel_ex(0, kernel, grid, block, smem, stream, std::forward<Args>(args)...);
}

// launch_kernel in thread-block clusters of cluster_x (>= 1) CTAs along x (grid.x a multiple).
template <typename... Params, typename... Args>
void launch_kernel_clusters(unsigned cluster_x, void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem,
                            cudaStream_t stream, Args&&... args) {
  SEAM_ASSERT(cluster_x >= 1 && grid.x % cluster_x == 0, "launch_kernel_clusters: grid ", grid.x,
              " is not a multiple of clusters of ", cluster_x);
  launch_kernel_ex(cluster_x, kernel, grid, block, smem, stream, std::forward<Args>(args)...);
}

// ---- host side: dtype dispatch and alignment tests ----
#define SEAM_DISPATCH_FLOAT_TYPES(dtype, T, what, ...)                                      \
  [&] {                                                                                     \
    switch (dtype) {                                                                        \
      case ::seam::DType::f32: { using T = float; return __VA_ARGS__(); }                   \
      case ::seam::DType::f16: { using T = __half; return __VA_ARGS__(); }                  \
      case ::seam::DType::bf16: { using T = __nv_bfloat16; return __VA_ARGS__(); }          \
      default: throw ::seam::Error(::seam::detail::concat(what, ": unsupported dtype ",     \
                                                          ::seam::dtype_name(dtype)));      \
    }                                                                                       \
  }()

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// The device's opt-in maximum of shared memory a block (cudaDevAttrMaxSharedMemoryPerBlockOptin),
// asked once a process: the limit kernels with large dynamic shared memory set and size against.
inline int smem_optin_max() {
  static const int bytes = [] {
    int device = 0, v = 0;
    SEAM_CUDA_CHECK(cudaGetDevice(&device));
    SEAM_CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    return v;
  }();
  return bytes;
}

// The current device's SM count, asked of the driver once a device: the launchers size their
// grids by it at every launch.
inline int current_device_sms() {
  constexpr int kCached = 64;  // devices past it ask every time
  static std::atomic<int> cached[kCached] = {};
  int dev = 0;
  SEAM_CUDA_CHECK(cudaGetDevice(&dev));
  const bool slot = dev >= 0 && dev < kCached;
  int n = slot ? cached[dev].load(std::memory_order_relaxed) : 0;
  if (n > 0) return n;
  SEAM_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
  if (slot) cached[dev].store(n, std::memory_order_relaxed);
  return n;
}

// Runs `set` (a launcher's cudaFuncSetAttribute calls for its kernels) the first time `key` is
// launched on the current device. Function attributes belong to a device: with several GPUs in
// one process (tensor parallelism: a rank a thread a device) each device needs its own, which a
// once-a-process static would give only the first. Host-side only: allowed while a graph is
// captured. The lock is held while `set` runs (so `set` must not launch through a launcher that
// calls once_per_device itself), and a `set` that throws is tried again next time.
template <class F>
void once_per_device(const void* key, F&& set) {
  static std::mutex m;
  static std::set<std::pair<const void*, int>> done;
  int dev = 0;
  SEAM_CUDA_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(m);
  if (done.count({key, dev})) return;
  set();
  done.insert({key, dev});
}

// True when rows of `t` (width `width` elements, row stride stride[0]) can be
// read with 16-byte vectors.
inline bool rows_vectorizable(const Tensor& t, int64_t width) {
  const int64_t vec = 16 / int64_t(dtype_size(t.dtype));
  return aligned16(t.data) && width % vec == 0 && (t.size(0) <= 1 || t.stride[0] % vec == 0);
}

inline unsigned int div_up(int64_t a, int64_t b) { return unsigned((a + b - 1) / b); }

}  // namespace seam::cuda
