#include "backend/cuda/store_kv.h"

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/kv_fp8.cuh"

namespace seam::cuda {

namespace {

// One block per token: row i of k and v goes to slot slots[i] of the caches (skipped outside
// [0, n_slots)); each thread hands `op` the elements j, j + kStep * blockDim.x, ... of the row,
// and op stores elements [j, j + kStep) of K and of V. Row width and strides count elements
// of Src and Dst alike (the same index j in both).
template <int kStep, typename Src, typename Dst, typename Op>
__global__ void store_kv_kernel(Dst* k_cache, Dst* v_cache, int64_t n_slots, const Src* k, int64_t k_stride,
                                const Src* v, int64_t v_stride, const int32_t* slots, int64_t width, Op op) {
  pdl_begin();
  const int64_t i = blockIdx.x;
  const int64_t s = slots[i];
  if (s < 0 || s >= n_slots) return;
  const Src* kr = k + i * k_stride;
  const Src* vr = v + i * v_stride;
  Dst* kc = k_cache + s * width;
  Dst* vc = v_cache + s * width;
  for (int64_t j = kStep * threadIdx.x; j < width; j += kStep * blockDim.x) op(kc, kr, vc, vr, j);
}

// A plain copy of one granule U (uint4 when aligned, else one element).
struct CopyUnit {
  template <typename U>
  __device__ void operator()(U* kc, const U* kr, U* vc, const U* vr, int64_t j) const {
    kc[j] = kr[j];
    vc[j] = vr[j];
  }
};

template <typename U>
void launch_units(const Tensor& k_cache, const Tensor& v_cache, const Tensor& k, const Tensor& v,
                  const Tensor& slots, int64_t unit_elems, cudaStream_t stream) {
  const int64_t width = k.size(1) * k.size(2) / unit_elems;
  const int threads = int(std::min<int64_t>(256, (width + 31) / 32 * 32));
  launch_kernel(store_kv_kernel<1, U, U, CopyUnit>, unsigned(k.size(0)), threads, 0, stream, k_cache.ptr<U>(),
                v_cache.ptr<U>(), k_cache.size(0), k.ptr<U>(), k.stride[0] / unit_elems, v.ptr<U>(),
                v.stride[0] / unit_elems, slots.ptr<int32_t>(), width, CopyUnit{});
  SEAM_CUDA_CHECK_LAUNCH();
}

// FP8 cache: each thread encodes pairs of elements (e4m3(x / scale)), stored as one uint16.
// `width` is even (head dims are), so every pair lies inside the row.
struct EncodeFp8Pair {
  KvScales sc;
  template <typename T>
  __device__ void operator()(uint8_t* kc, const T* kr, uint8_t* vc, const T* vr, int64_t j) const {
    const uint32_t k2 = uint32_t(e4m3_encode(to_float(kr[j]) / sc.k)) | uint32_t(e4m3_encode(to_float(kr[j + 1]) / sc.k)) << 8;
    const uint32_t v2 = uint32_t(e4m3_encode(to_float(vr[j]) / sc.v)) | uint32_t(e4m3_encode(to_float(vr[j + 1]) / sc.v)) << 8;
    *reinterpret_cast<uint16_t*>(kc + j) = uint16_t(k2);
    *reinterpret_cast<uint16_t*>(vc + j) = uint16_t(v2);
  }
};

}  // namespace

void launch_store_kv(const Tensor& k_cache, const Tensor& v_cache, const Tensor& k, const Tensor& v,
                     const Tensor& slots, cudaStream_t stream, KvScales sc) {
  if (k.size(0) == 0) return;
  if (k_cache.dtype == DType::fp8_e4m3) {
    const int64_t width = k.size(1) * k.size(2);
    SEAM_CHECK(width % 2 == 0, "store_kv: an FP8 cache needs an even row width, got ", width);
    const int threads = int(std::min<int64_t>(256, (width / 2 + 31) / 32 * 32));
    SEAM_DISPATCH_FLOAT_TYPES(k.dtype, T, "store_kv", [&] {
      launch_kernel(store_kv_kernel<2, T, uint8_t, EncodeFp8Pair>, unsigned(k.size(0)), threads, 0, stream,
                    k_cache.ptr<uint8_t>(), v_cache.ptr<uint8_t>(), k_cache.size(0), k.ptr<T>(), k.stride[0],
                    v.ptr<T>(), v.stride[0], slots.ptr<int32_t>(), width, EncodeFp8Pair{sc});
    });
    SEAM_CUDA_CHECK_LAUNCH();
    return;
  }
  const int64_t width = k.size(1) * k.size(2);
  const int64_t esize = int64_t(dtype_size(k.dtype));
  if (rows_vectorizable(k, width) && rows_vectorizable(v, width) && rows_vectorizable(k_cache, width) &&
      rows_vectorizable(v_cache, width))
    return launch_units<uint4>(k_cache, v_cache, k, v, slots, 16 / esize, stream);
  if (esize == 4) return launch_units<uint32_t>(k_cache, v_cache, k, v, slots, 1, stream);
  return launch_units<uint16_t>(k_cache, v_cache, k, v, slots, 1, stream);
}

}  // namespace seam::cuda
