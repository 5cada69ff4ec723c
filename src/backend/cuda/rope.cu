#include "backend/cuda/rope.h"

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/rope_rotate.cuh"
#include "backend/cuda/kv_fp8.cuh"

namespace seam::cuda {

namespace {

template <typename T, int P>
struct alignas(P * sizeof(T)) Pack {
  T v[P];
};

// Where rope_kernel<STORE = true> also writes the token's rotated K and its V: a cache of
// element KV = T, or of E4M3 codes (KV = Fp8: e4m3(x / scale), kv_fp8.cuh).
template <typename T, typename KV = T>
struct KvDest {
  const T* v = nullptr;  // [n, n_kv_heads, d], row stride v_stride
  int64_t v_stride = 0;
  KV* k_cache = nullptr;  // [n_slots, n_kv_heads, d]
  KV* v_cache = nullptr;
  const int32_t* slots = nullptr;  // [n]
  int64_t n_slots = 0;
  KvScales scales;  // FP8 only
};

// Stores P elements `a` at `dst` of a KV cache: as they are, or encoded (e4m3(x / scale)).
template <typename T, typename KV, int P>
__device__ __forceinline__ void put(KV* dst, const Pack<T, P>& a, float scale) {
  if constexpr (kIsFp8<KV>) {
#pragma unroll
    for (int i = 0; i < P; ++i) dst[i] = e4m3_encode(to_float(a.v[i]) / scale);
  } else {
    *reinterpret_cast<Pack<T, P>*>(dst) = a;
  }
}

// The rotary tables as the kernel reads them (RopeTables): the angles (rope_angle.h) and
// their count.
struct Tables {
  RopeAngles angles;
  int half = 0;  // rotary_dim / 2 (<= d / 2): dims [2 half, d) pass through
};

// One block per token. cos/sin of the token's angles are computed once into shared
// memory (half values), then every (head, pair-group) of q and k is rotated; each
// thread handles P consecutive i (and their partners i + half). With STORE the rotated
// K (and its pass-through dims past the rotary ones) and the V of the token also go to its
// KV slot (decode steps then launch one kernel, not two); a slot outside [0, n_slots) is
// skipped like store_kv does.
template <typename T, typename KV, int P, bool STORE>
__global__ void rope_kernel(T* q, int64_t q_stride, int n_heads, T* k, int64_t k_stride, int n_kv_heads,
                            const int32_t* positions, Tables tb, int d, KvDest<T, KV> kv) {
  pdl_begin();
  extern __shared__ float cs[];  // [2, half]: cos then sin
  const int half = tb.half;
  const int64_t tok = blockIdx.x;
  const int position = positions[tok];
  for (int j = threadIdx.x; j < half; j += blockDim.x) {
    float s, c;
    sincosf(tb.angles.angle(position, j), &s, &c);  // rope_angle.h: reduced mod 2 pi in double
    cs[j] = c;
    cs[half + j] = s;
  }
  __syncthreads();
  const int groups = half / P;
  const int pass = (d - 2 * half) / P;  // pass-through groups of a head (0 with full rotary)
  const int n_rotate = (n_heads + n_kv_heads) * groups;
  const int n_k_pass = STORE ? n_kv_heads * pass : 0;
  const int n_items = n_rotate + (STORE ? n_k_pass + n_kv_heads * (d / P) : 0);
  const int64_t slot = STORE ? kv.slots[tok] : -1;
  const bool store = STORE && slot >= 0 && slot < kv.n_slots;
  const int64_t width = int64_t(n_kv_heads) * d;
  for (int it = threadIdx.x; it < n_items; it += blockDim.x) {
    if (STORE && it >= n_rotate) {  // K's pass-through dims, then V: plain copies of P elements
      if (!store) continue;
      const int c = it - n_rotate;
      if (c < n_k_pass) {
        const int h = c / pass, e = 2 * half + (c % pass) * P;
        put<T, KV, P>(kv.k_cache + slot * width + int64_t(h) * d + e,
                      *reinterpret_cast<const Pack<T, P>*>(k + tok * k_stride + int64_t(h) * d + e), kv.scales.k);
        continue;
      }
      const int e = (c - n_k_pass) * P;
      put<T, KV, P>(kv.v_cache + slot * width + e, *reinterpret_cast<const Pack<T, P>*>(kv.v + tok * kv.v_stride + e),
                    kv.scales.v);
      continue;
    }
    const int h = it / groups, j = (it % groups) * P;
    T* v = h < n_heads ? q + tok * q_stride + int64_t(h) * d : k + tok * k_stride + int64_t(h - n_heads) * d;
    Pack<T, P> a = *reinterpret_cast<const Pack<T, P>*>(v + j);
    Pack<T, P> b = *reinterpret_cast<const Pack<T, P>*>(v + j + half);
#pragma unroll
    for (int i = 0; i < P; ++i) {
      const float x = to_float(a.v[i]), y = to_float(b.v[i]);
      const float c = cs[j + i], s = cs[half + j + i];
      float r0, r1;
      rope_rotate(x, y, c, s, r0, r1);  // rope_rotate.cuh: no FMA contraction
      a.v[i] = from_float<T>(r0);
      b.v[i] = from_float<T>(r1);
    }
    *reinterpret_cast<Pack<T, P>*>(v + j) = a;
    *reinterpret_cast<Pack<T, P>*>(v + j + half) = b;
    if (store && h >= n_heads) {
      KV* c = kv.k_cache + slot * width + int64_t(h - n_heads) * d;
      put<T, KV, P>(c + j, a, kv.scales.k);
      put<T, KV, P>(c + j + half, b, kv.scales.k);
    }
  }
}

Tables tables_of(const RopeTables& t) {
  Tables tb;
  tb.angles = t.angles();
  tb.half = int(t.inv_freq.size(0));
  return tb;
}

template <typename T, typename KV, bool STORE>
void launch_typed(const Tensor& q, const Tensor& k, const Tensor& positions, const RopeTables& t,
                  const KvDest<T, KV>& kv, cudaStream_t stream) {
  const Tables tb = tables_of(t);
  const int d = int(q.size(2)), half = tb.half;
  const int n_items = int((q.size(1) + k.size(1)) * half + (STORE ? k.size(1) * (d - half) : 0));
  const int threads = std::min(256, (n_items / 2 + 31) / 32 * 32 + 32);
  const size_t smem = size_t(2 * half) * sizeof(float);
  // Pairs of elements need an even rotary half and every head start aligned to two elements in
  // q, k and, when storing, v and the caches (whose rows of n_kv_heads * d are then even).
  const auto even = [](const void* p, int64_t stride, size_t elem = sizeof(T)) {
    return (reinterpret_cast<uintptr_t>(p) % (2 * elem)) == 0 && stride % 2 == 0;
  };
  const bool pairs = half % 2 == 0 && even(q.data, q.stride[0]) && even(k.data, k.stride[0]) &&
                     (!STORE || (even(kv.v, kv.v_stride) && even(kv.k_cache, 2, sizeof(KV)) && even(kv.v_cache, 2, sizeof(KV))));
  if (pairs)
    launch_kernel(rope_kernel<T, KV, 2, STORE>, unsigned(q.size(0)), threads, smem, stream, q.ptr<T>(), q.stride[0],
                  int(q.size(1)), k.ptr<T>(), k.stride[0], int(k.size(1)), positions.ptr<int32_t>(), tb,
                  d, kv);
  else
    launch_kernel(rope_kernel<T, KV, 1, STORE>, unsigned(q.size(0)), threads, smem, stream, q.ptr<T>(), q.stride[0],
                  int(q.size(1)), k.ptr<T>(), k.stride[0], int(k.size(1)), positions.ptr<int32_t>(), tb,
                  d, kv);
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_rope(const Tensor& q, const Tensor& k, const Tensor& positions, const RopeTables& t,
                 cudaStream_t stream) {
  if (q.size(0) == 0) return;
  SEAM_DISPATCH_FLOAT_TYPES(q.dtype, T, "rope",
                            [&] { launch_typed<T, T, false>(q, k, positions, t, KvDest<T>{}, stream); });
}

void launch_rope_store_kv(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& positions,
                          const RopeTables& t, const Tensor& k_cache, const Tensor& v_cache, const Tensor& slots,
                          cudaStream_t stream, KvScales sc) {
  if (q.size(0) == 0) return;
  SEAM_DISPATCH_FLOAT_TYPES(q.dtype, T, "rope_store_kv", [&] {
    if (k_cache.dtype == DType::fp8_e4m3) {
      KvDest<T, Fp8> kv{v.ptr<T>(), v.stride[0], k_cache.ptr<Fp8>(), v_cache.ptr<Fp8>(), slots.ptr<int32_t>(),
                        k_cache.size(0), sc};
      return launch_typed<T, Fp8, true>(q, k, positions, t, kv, stream);
    }
    KvDest<T> kv{v.ptr<T>(), v.stride[0], k_cache.ptr<T>(), v_cache.ptr<T>(), slots.ptr<int32_t>(), k_cache.size(0)};
    launch_typed<T, T, true>(q, k, positions, t, kv, stream);
  });
}

}  // namespace seam::cuda
