#include "backend/cuda/fp8_quantize.h"

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/fp8_act.cuh"
#include "backend/cuda/fp8_row_quantize.cuh"

namespace seam::cuda {

namespace {

constexpr int kThreads = 128;

// One block per (row, group): amax over the group by a block reduction, then the codes.
template <typename T>
__global__ void fp8_quantize_kernel(uint8_t* codes, float* scales, const T* x, int64_t x_stride, int64_t n_in,
                                    int64_t width, int n_groups, int act, const float* input_scale, float ub) {
  pdl_begin();
  const int64_t row = blockIdx.y;
  const int g = int(blockIdx.x);
  const int64_t begin = int64_t(g) * width, end = min(n_in, begin + width);
  const T* xr = x + row * x_stride;
  __shared__ float s_red[kThreads / 32];
  __shared__ float s_scale;
  float s;
  if (act == int(Fp8ActScheme::static_per_tensor)) {
    s = *input_scale;
  } else {
    float amax = 0.f;
    for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x) amax = fmaxf(amax, fabsf(to_float(xr[k])));
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    if ((threadIdx.x & 31) == 0) s_red[threadIdx.x / 32] = amax;
    __syncthreads();
    if (threadIdx.x == 0) {
      float a = 0.f;
      for (int i = 0; i < kThreads / 32; ++i) a = fmaxf(a, s_red[i]);
      s_scale = fp8_act_scale(a, ub);
    }
    __syncthreads();
    s = s_scale;
  }
  if (threadIdx.x == 0) scales[int64_t(g) * gridDim.y + row] = s;  // [n_groups, n]: token fastest
  for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x) codes[row * n_in + k] = fp8_act_code(to_float(xr[k]), s);
}

// The register path (fp8_row_quantize.cuh): one block of kRowThreads per row, the row read
// once in 16-byte vectors, codes stored 8 at a time. The scalar kernel above reads the row
// twice with 2-byte loads and stores codes a byte at a time (45 µs for 4,096 x 4,096 bf16 on
// the H200, ~4 x the bytes' time).
constexpr int kRowThreads = 256;
template <typename T, int kChunks>
__global__ void __launch_bounds__(kRowThreads)
    fp8_quantize_row_kernel(uint8_t* codes, float* scales, const T* x, int64_t x_stride, int n_in, int act,
                            const float* input_scale, float ub) {
  pdl_begin();
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x;
  const uint4* xr = reinterpret_cast<const uint4*>(x + row * x_stride);
  const int n_chunks = n_in / 8;
  uint4 v[kChunks];
#pragma unroll
  for (int s = 0; s < kChunks; ++s) {
    const int c = s * kRowThreads + int(threadIdx.x);
    v[s] = c < n_chunks ? xr[c] : make_uint4(0, 0, 0, 0);
  }
  const float static_scale = act == int(Fp8ActScheme::static_per_tensor) ? *input_scale : 0.f;
  quantize_row_chunks<T, kRowThreads, kChunks>(v, n_chunks, act, static_scale, ub, codes + row * n_in, scales, row,
                                               gridDim.x, scratch);
}

template <typename T>
bool launch_row_path(const Tensor& codes, const Tensor& scales, const Tensor& x, const Fp8Weight& w,
                     const float* input_scale, cudaStream_t stream) {
  if constexpr (sizeof(T) != 2) {
    return false;
  } else {
    const int64_t n = x.size(0), n_in = x.size(1);
    if (!fp8_row_path_applies(sizeof(T), n_in, codes.ptr<uint8_t>(), kRowThreads) || !aligned16(x.data) ||
        x.stride[0] % 8 != 0 || n > INT32_MAX)
      return false;
    with_row_chunks(fp8_row_chunks(n_in, kRowThreads), [&](auto k) {
      launch_kernel(fp8_quantize_row_kernel<T, decltype(k)::value>, dim3(unsigned(n)), kRowThreads, 0, stream,
                    codes.ptr<uint8_t>(), scales.ptr<float>(), x.ptr<const T>(), x.stride[0], int(n_in), int(w.act),
                    input_scale, w.act_amax_ub);
    });
    SEAM_CUDA_CHECK_LAUNCH();
    return true;
  }
}

}  // namespace

void launch_fp8_quantize_act(const Tensor& codes, const Tensor& scales, const Tensor& x, const Fp8Weight& w,
                             cudaStream_t stream) {
  const int64_t n = x.size(0), n_in = x.size(1);
  if (n == 0 || n_in == 0) return;
  const bool grouped = w.act == Fp8ActScheme::dynamic_group128;
  const int64_t width = grouped ? kFp8Group : n_in;
  const int n_groups = int(div_up(n_in, width));
  SEAM_ASSERT(codes.dtype == DType::fp8_e4m3 && codes.contiguous() && codes.numel() >= n * n_in);
  SEAM_ASSERT(scales.dtype == DType::f32 && scales.contiguous() && scales.numel() >= n * n_groups);
  const float* input_scale = w.act == Fp8ActScheme::static_per_tensor ? w.input_scale.ptr<float>() : nullptr;
  SEAM_DISPATCH_FLOAT_TYPES(x.dtype, T, "fp8 quantize", [&] {
    if (launch_row_path<T>(codes, scales, x, w, input_scale, stream)) return;
    SEAM_ASSERT(n <= 65535, "fp8 quantize: ", n, " rows exceed the grid's y limit");
    launch_kernel(fp8_quantize_kernel<T>, dim3(unsigned(n_groups), unsigned(n)), kThreads, 0, stream,
                  codes.ptr<uint8_t>(), scales.ptr<float>(), x.ptr<const T>(), x.stride[0], n_in, width, n_groups,
                  int(w.act), input_scale, w.act_amax_ub);
    SEAM_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace seam::cuda
