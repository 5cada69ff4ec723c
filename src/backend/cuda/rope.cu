#include "backend/cuda/rope.h"

#include <algorithm>
#include <type_traits>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/rope_rotate.cuh"
#include "backend/cuda/kv_fp8.cuh"
#include "backend/cuda/rope_kv_store.cuh"

namespace seam::cuda {

namespace {

using namespace rope_io;  // Pack, KvDest, put, Tables, tables_of (rope_kv_store.cuh)

// One block per token; each thread handles P consecutive i of one (head, pair-group) of q or k
// (and their partners i + half), or, with STORE, P elements of K's pass-through dims or of V.
// With STORE the rotated K (and its pass-through dims) and the V of the token also go to its
// KV slot (decode steps then launch one kernel, not two); a slot outside [0, n_slots) is
// skipped like store_kv does.
//
// Latency is the whole cost at decode sizes (64 tokens: ~2 us of bytes), so the kernel is
// one memory round trip where the block covers its items: every thread loads its vectors
// first, then the token's cos/sin go into shared memory (position -> table -> sincos, a
// dependent chain of its own that now overlaps the loads), then rotate and store. The earlier
// form (sincos first, then a loop of 2-element load/rotate/store whose loads could not be
// hoisted over the stores, q and the caches may alias as far as the compiler knows) took
// ~7 us a layer at 64 tokens on the H200 (CUPTI, FP8 decode batch 64).
template <typename T, typename KV, int P, bool STORE>
__global__ void rope_kernel(T* q, int64_t q_stride, int n_heads, T* k, int64_t k_stride, int n_kv_heads,
                            const int32_t* positions, Tables tb, int d, KvDest<T, KV> kv) {
  pdl_begin();
  extern __shared__ float cs[];  // [2, half]: cos then sin
  const int half = tb.half;
  const int64_t tok = blockIdx.x;
  const int groups = half / P;
  const int pass = (d - 2 * half) / P;  // pass-through groups of a head (0 with full rotary)
  const int n_rotate = (n_heads + n_kv_heads) * groups;
  const int n_k_pass = STORE ? n_kv_heads * pass : 0;
  const int n_items = n_rotate + (STORE ? n_k_pass + n_kv_heads * (d / P) : 0);
  const int64_t slot = STORE ? kv.slots[tok] : -1;
  const bool store = STORE && slot >= 0 && slot < kv.n_slots;
  const int64_t width = int64_t(n_kv_heads) * d;
  for (int base = 0; base < n_items; base += blockDim.x) {  // uniform: one pass when blockDim >= n_items
    const int it = base + int(threadIdx.x);
    const bool rotate = it < n_rotate;
    const bool copy = STORE && store && it >= n_rotate && it < n_items;
    // The loads (a rotate item's pair of vectors, or a copy item's one vector).
    T* v = nullptr;
    int h = 0, j = 0;
    Pack<T, P> a{}, b{};
    const T* src = nullptr;
    KV* dst = nullptr;
    float dst_scale = 1.f;
    if (rotate) {
      h = it / groups;
      j = (it % groups) * P;
      v = h < n_heads ? q + tok * q_stride + int64_t(h) * d : k + tok * k_stride + int64_t(h - n_heads) * d;
      a = *reinterpret_cast<const Pack<T, P>*>(v + j);
      b = *reinterpret_cast<const Pack<T, P>*>(v + j + half);
    } else if (copy) {
      const int c = it - n_rotate;
      if (c < n_k_pass) {  // K's pass-through dims
        const int hh = c / pass, e = 2 * half + (c % pass) * P;
        src = k + tok * k_stride + int64_t(hh) * d + e;
        dst = kv.k_cache + slot * width + int64_t(hh) * d + e;
        dst_scale = kv.scales.k;
      } else {  // V
        const int e = (c - n_k_pass) * P;
        src = kv.v + tok * kv.v_stride + e;
        dst = kv.v_cache + slot * width + e;
        dst_scale = kv.scales.v;
      }
      a = *reinterpret_cast<const Pack<T, P>*>(src);
    }
    if (base == 0) {
      const int position = positions[tok];
      for (int jj = threadIdx.x; jj < half; jj += blockDim.x) {
        float s, c;
        sincosf(tb.angles.angle(position, jj), &s, &c);  // rope_angle.h: reduced mod 2 pi in double
        cs[jj] = c;
        cs[half + jj] = s;
      }
      __syncthreads();
    }
    if (copy) {
      put<T, KV, P>(dst, a, dst_scale);
      continue;
    }
    if (!rotate) continue;
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

template <typename T, typename KV, bool STORE>
void launch_typed(const Tensor& q, const Tensor& k, const Tensor& positions, const RopeTables& t,
                  const KvDest<T, KV>& kv, cudaStream_t stream) {
  const Tables tb = tables_of(t);
  const int d = int(q.size(2)), half = tb.half;
  const size_t smem = size_t(2 * half) * sizeof(float);
  // P elements a thread need P | half and P | d (pass-through dims, V) and every head start
  // aligned to P elements in q, k and, when storing, v and the caches.
  const auto aligned = [](const void* p, int64_t stride, int64_t bytes) {
    return (reinterpret_cast<uintptr_t>(p) % uintptr_t(bytes)) == 0 && stride % bytes == 0;
  };
  const auto fits = [&](int p) {
    const int64_t e = int64_t(p) * int64_t(sizeof(T)), ekv = int64_t(p) * int64_t(sizeof(KV));
    return half % p == 0 && d % p == 0 && aligned(q.data, q.stride[0] * int64_t(sizeof(T)), e) &&
           aligned(k.data, k.stride[0] * int64_t(sizeof(T)), e) &&
           (!STORE || (aligned(kv.v, kv.v_stride * int64_t(sizeof(T)), e) && aligned(kv.k_cache, ekv, ekv) &&
                       aligned(kv.v_cache, ekv, ekv)));
  };
  const int heads = int(q.size(1) + k.size(1));
  const auto launch = [&](auto pc) {
    constexpr int P = decltype(pc)::value;
    const int n_items = heads * (half / P) + (STORE ? int(k.size(1)) * ((d - 2 * half) / P + d / P) : 0);
    const int threads = std::min(1024, std::max(32, (n_items + 31) / 32 * 32));
    launch_kernel(rope_kernel<T, KV, P, STORE>, unsigned(q.size(0)), threads, smem, stream, q.ptr<T>(), q.stride[0],
                  int(q.size(1)), k.ptr<T>(), k.stride[0], int(k.size(1)), positions.ptr<int32_t>(), tb, d, kv);
  };
  if (fits(8))
    launch(std::integral_constant<int, 8>{});
  else if (fits(2))
    launch(std::integral_constant<int, 2>{});
  else
    launch(std::integral_constant<int, 1>{});
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
