#include "backend/cuda/qk_norm_rope_store.h"

#include <type_traits>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/diagnostic_switch.h"
#include "backend/cuda/qk_norm_rope_head.cuh"

namespace seam::cuda {

namespace {

constexpr int kWarps = 8;               // per block: one head each
constexpr int kSharedMaxHeadDim = 256;  // the shared-angle form's NV <= 8 values a lane

template <typename T>
struct QkArgs {
  T* q;  // [n, n_heads, d], row stride q_stride
  int64_t q_stride;
  T* k;  // [n, n_kv_heads, d]
  int64_t k_stride;
  const T* v;  // [n, n_kv_heads, d]
  int64_t v_stride;
  const T* q_norm;  // [d]
  const T* k_norm;  // [d]
  float eps;
  int n_heads, n_kv_heads, d;
  const int32_t* positions;      // [n]
  RopeAngles angles;             // the rotary tables (rope_angle.h)
  int half;                      // rotary_dim / 2: dims [2 half, d) pass through
  T* k_cache;                    // [n_slots, n_kv_heads, d]
  T* v_cache;
  const int32_t* slots;          // [n]
  int64_t n_slots;
};

// Grid (token, head group): warp w of block (tok, g) owns head g * kWarps + w of the token's
// [q heads | k heads | v heads] and finishes it with qk_norm_rope_store_head (qk_norm_rope_head.cuh:
// norm, RoPE and the KV store of a q or k head in place; a v head copied to the cache).
template <typename T>
__global__ void __launch_bounds__(kWarps * 32) qk_norm_rope_store_kernel(QkArgs<T> a) {
  pdl_begin();
  const int64_t tok = blockIdx.x;
  const int head = blockIdx.y * kWarps + (threadIdx.x >> 5);
  const int n_qk = a.n_heads + a.n_kv_heads;
  if (head >= n_qk + a.n_kv_heads) return;  // warp-uniform; no block barrier below
  const int d = a.d;
  const int64_t slot = a.slots[tok];
  const bool store = slot >= 0 && slot < a.n_slots;
  const int64_t cache_row = (slot * a.n_kv_heads) * d;
  QkHead<T> h;
  h.eps = a.eps;
  h.d = d;
  h.half = a.half;
  h.position = a.positions[tok];
  h.angles = a.angles;
  if (head >= n_qk) {  // v: a plain copy
    const int vh = head - n_qk;
    h.x = const_cast<T*>(a.v + tok * a.v_stride + int64_t(vh) * d);  // read only (w null)
    h.w = nullptr;
    h.cache = store ? a.v_cache + cache_row + int64_t(vh) * d : nullptr;
  } else {
    const bool is_q = head < a.n_heads;
    h.x = is_q ? a.q + tok * a.q_stride + int64_t(head) * d : a.k + tok * a.k_stride + int64_t(head - a.n_heads) * d;
    h.w = is_q ? a.q_norm : a.k_norm;
    h.cache = !is_q && store ? a.k_cache + cache_row + int64_t(head - a.n_heads) * d : nullptr;
  }
  qk_norm_rope_store_head(h, [](const T* p) { return *p; });
}

// The shared-angle form (QkNormRopeKernel::shared_angles). The per-head kernel above computes
// each rotary pair's angle and sincos in every q and k head of a token (36 times a token at
// Qwen3-30B-A3B's 32 + 4 heads), a chain of double-precision reduction and sincosf that made it
// latency-bound at prefill sizes (~80 us a layer at 4,096 tokens against ~22 us of bytes: 88 MB).
// Here a block's threads compute its token's cos / sin once into shared memory while the head
// loads are in flight (as rope.cu), and each warp reads its head from global memory once (NV values a
// lane, all loads issued before any use) instead of twice. Its arithmetic is the per-head
// function's (qk_norm_rope_head.cuh's helpers, the same sincosf of the same angle, rope_rotate),
// in the same order, so both forms store the same bits (cuda_qk_norm_rope_store_test).
// Shared memory: cos [half], sin [half], then each warp's normed head [kWarps][d] (float), which
// lets a lane's rotary pairs and pass-through dims be any dims (partial rotary, half % 32 != 0).
template <typename T, int NV>
__global__ void __launch_bounds__(kWarps * 32) qk_norm_rope_store_shared_kernel(QkArgs<T> a) {
  pdl_begin();
  extern __shared__ float smem[];
  const int half = a.half, d = a.d;
  float* cs = smem;  // [2 half]: cos then sin
  const int warp = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31);
  float* sn = smem + 2 * half + warp * d;  // this warp's normed head
  const int64_t tok = blockIdx.x;
  const int head = int(blockIdx.y) * kWarps + warp;
  const int n_qk = a.n_heads + a.n_kv_heads;
  const bool active = head < n_qk + a.n_kv_heads;  // warp-uniform
  const bool is_v = head >= n_qk, is_q = head < a.n_heads;
  const T* x = nullptr;
  if (active)
    x = is_v   ? a.v + tok * a.v_stride + int64_t(head - n_qk) * d
        : is_q ? a.q + tok * a.q_stride + int64_t(head) * d
               : a.k + tok * a.k_stride + int64_t(head - a.n_heads) * d;
  // The head's values, lane l holding dims l, l + 32, ... (< d), raw (a v head is copied as its
  // bits): every load issued before the angle chain below, whose latency they then overlap.
  T xr[NV];
#pragma unroll
  for (int m = 0; m < NV; ++m) {
    const int j = lane + 32 * m;
    if (active && j < d) xr[m] = x[j];
  }
  const int position = a.positions[tok];
  for (int i = int(threadIdx.x); i < half; i += int(blockDim.x)) {
    float s, c;
    sincosf(a.angles.angle(position, i), &s, &c);  // as the per-head kernel (and rope_kernel)
    cs[i] = c;
    cs[half + i] = s;
  }
  __syncthreads();  // the only block barrier: inactive warps leave after it
  if (!active) return;
  const int64_t slot = a.slots[tok];
  const bool store = slot >= 0 && slot < a.n_slots;
  const int64_t cache_row = (slot * a.n_kv_heads) * d;
  if (is_v) {  // a plain copy
    if (!store) return;
    T* c = a.v_cache + cache_row + int64_t(head - n_qk) * d;
#pragma unroll
    for (int m = 0; m < NV; ++m)
      if (lane + 32 * m < d) c[lane + 32 * m] = xr[m];
    return;
  }
  float xv[NV];
  float ss = 0.f;
#pragma unroll
  for (int m = 0; m < NV; ++m) {
    xv[m] = lane + 32 * m < d ? to_float(xr[m]) : 0.f;
    if (lane + 32 * m < d) ss = qk_norm_square_add(ss, xv[m]);
  }
  ss = warp_sum(ss);
  const float scale = qk_norm_scale(ss, d, a.eps);
  const T* w = is_q ? a.q_norm : a.k_norm;
#pragma unroll
  for (int m = 0; m < NV; ++m) {
    const int j = lane + 32 * m;
    if (j < d) sn[j] = qk_normed<T>(xv[m], scale, w[j]);
  }
  __syncwarp();  // a lane's pairs are other lanes' dims
  T* cache = !is_q && store ? a.k_cache + cache_row + int64_t(head - a.n_heads) * d : nullptr;
  qk_rope_store(
      const_cast<T*>(x), cache, d, half, lane, [&](int j) { return sn[j]; },
      [&](int i, float& s, float& c) { c = cs[i], s = cs[half + i]; });
}

template <typename T>
void launch_typed(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_norm, const Tensor& k_norm,
                  float eps, const Tensor& positions, const RopeTables& t, const Tensor& k_cache,
                  const Tensor& v_cache, const Tensor& slots, QkNormRopeKernel kernel, cudaStream_t stream) {
  QkArgs<T> a{};
  a.q = q.ptr<T>();
  a.q_stride = q.stride[0];
  a.k = k.ptr<T>();
  a.k_stride = k.stride[0];
  a.v = v.ptr<T>();
  a.v_stride = v.stride[0];
  a.q_norm = q_norm.ptr<T>();
  a.k_norm = k_norm.ptr<T>();
  a.eps = eps;
  a.n_heads = int(q.size(1));
  a.n_kv_heads = int(k.size(1));
  a.d = int(q.size(2));
  a.positions = positions.ptr<int32_t>();
  a.angles = t.angles();
  a.half = int(t.inv_freq.size(0));
  a.k_cache = k_cache.ptr<T>();
  a.v_cache = v_cache.ptr<T>();
  a.slots = slots.ptr<int32_t>();
  a.n_slots = k_cache.size(0);
  const int n_heads_all = a.n_heads + 2 * a.n_kv_heads;
  const dim3 grid(unsigned(q.size(0)), unsigned((n_heads_all + kWarps - 1) / kWarps));
  if (kernel == QkNormRopeKernel::shared_angles && qk_norm_rope_shared_applies(a.d)) {
    const size_t smem = size_t(2 * a.half + kWarps * a.d) * sizeof(float);
    auto go = [&](auto nv) {
      launch_kernel(qk_norm_rope_store_shared_kernel<T, decltype(nv)::value>, grid, kWarps * 32, smem, stream, a);
    };
    if (a.d <= 32) go(std::integral_constant<int, 1>{});
    else if (a.d <= 64) go(std::integral_constant<int, 2>{});
    else if (a.d <= 128) go(std::integral_constant<int, 4>{});
    else go(std::integral_constant<int, 8>{});
  } else {
    launch_kernel(qk_norm_rope_store_kernel<T>, grid, kWarps * 32, 0, stream, a);
  }
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace

bool qk_norm_rope_shared_applies(int64_t d) { return d >= 1 && d <= kSharedMaxHeadDim; }

QkNormRopeKernel qk_norm_rope_kernel_default() {
  // 1: shared_angles, the default (H200, 2026-12-05: Qwen3-30B-A3B prefill of 4,096 +0.6 % alone,
  // docs/performance.md, twenty-eighth pass), 0: per_head.
  static const int v = env_choice("SEAM_QK_NORM_ROPE_KERNEL", 1, {0, 1});
  return v == 1 ? QkNormRopeKernel::shared_angles : QkNormRopeKernel::per_head;
}

void launch_qk_norm_rope_store(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_norm,
                               const Tensor& k_norm, float eps, const Tensor& positions, const RopeTables& t,
                               const Tensor& k_cache, const Tensor& v_cache, const Tensor& slots, cudaStream_t stream,
                               QkNormRopeKernel kernel) {
  if (q.size(0) == 0) return;
  // Both kernels store the activation dtype's values as they are (no E4M3 encoding: an FP8 cache
  // takes the backend's composed path with its KV scales); a cache of another dtype would be
  // written with the wrong element size.
  SEAM_CHECK(k_cache.dtype == q.dtype && v_cache.dtype == q.dtype, "qk_norm_rope_store: caches ",
             dtype_name(k_cache.dtype), " / ", dtype_name(v_cache.dtype), " must be q's dtype ", dtype_name(q.dtype));
  SEAM_DISPATCH_FLOAT_TYPES(q.dtype, T, "qk_norm_rope_store", [&] {
    launch_typed<T>(q, k, v, q_norm, k_norm, eps, positions, t, k_cache, v_cache, slots, kernel, stream);
  });
}

}  // namespace seam::cuda
