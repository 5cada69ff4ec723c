#include "backend/cuda/qk_norm_rope_store.h"

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/rope_rotate.cuh"

namespace seam::cuda {

namespace {

constexpr int kWarps = 8;  // per block: one head each

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
// [q heads | k heads | v heads]. A q or k head: pass 1 sums the squares of its d values; pass 2
// gives each lane whole rotary pairs (i, i + half) and pass-through dims, normalises them
// (rounded to T, as rms_norm writes them), rotates the pairs (rounded to T, as rope_kernel) and
// writes them back in place (attention reads q from qkv) and, for k, to the token's KV slot.
// In place is safe: a head is one warp's, and every lane's pass-1 loads precede the warp_sum
// that every pass-2 store follows. A v head is copied to the cache.
template <typename T>
__global__ void __launch_bounds__(kWarps * 32) qk_norm_rope_store_kernel(QkArgs<T> a) {
  pdl_begin();
  const int lane = threadIdx.x & 31;
  const int64_t tok = blockIdx.x;
  const int head = blockIdx.y * kWarps + (threadIdx.x >> 5);
  const int n_qk = a.n_heads + a.n_kv_heads;
  if (head >= n_qk + a.n_kv_heads) return;  // warp-uniform; no block barrier below
  const int d = a.d;
  const int64_t slot = a.slots[tok];
  const bool store = slot >= 0 && slot < a.n_slots;
  const int64_t cache_row = (slot * a.n_kv_heads) * d;
  if (head >= n_qk) {  // v: a plain copy
    if (!store) return;
    const int h = head - n_qk;
    const T* src = a.v + tok * a.v_stride + int64_t(h) * d;
    T* dst = a.v_cache + cache_row + int64_t(h) * d;
    for (int j = lane; j < d; j += 32) dst[j] = src[j];
    return;
  }
  const bool is_q = head < a.n_heads;
  T* x = is_q ? a.q + tok * a.q_stride + int64_t(head) * d
              : a.k + tok * a.k_stride + int64_t(head - a.n_heads) * d;
  const T* w = is_q ? a.q_norm : a.k_norm;
  T* cache = !is_q && store ? a.k_cache + cache_row + int64_t(head - a.n_heads) * d : nullptr;

  float ss = 0.f;
  for (int j = lane; j < d; j += 32) {
    const float f = to_float(x[j]);
    ss += f * f;
  }
  ss = warp_sum(ss);
  const float scale = 1.f / sqrtf(ss / float(d) + a.eps);  // as rms_norm.cu
  // The normed value of dim j, rounded as the rms_norm kernel stores it.
  auto normed = [&](int j) { return to_float(from_float<T>(to_float(x[j]) * scale * to_float(w[j]))); };

  const int half = a.half;
  const int position = a.positions[tok];
  for (int i = lane; i < half; i += 32) {
    const float x0 = normed(i), x1 = normed(i + half);
    float s, c;
    sincosf(a.angles.angle(position, i), &s, &c);  // as rope_kernel
    float r0, r1;
    rope_rotate(x0, x1, c, s, r0, r1);  // rope_rotate.cuh: rope.cu's bits
    const T t0 = from_float<T>(r0), t1 = from_float<T>(r1);
    x[i] = t0;
    x[i + half] = t1;
    if (cache != nullptr) {
      cache[i] = t0;
      cache[i + half] = t1;
    }
  }
  for (int j = 2 * half + lane; j < d; j += 32) {
    const T t = from_float<T>(normed(j));
    x[j] = t;
    if (cache != nullptr) cache[j] = t;
  }
}

template <typename T>
void launch_typed(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_norm, const Tensor& k_norm,
                  float eps, const Tensor& positions, const RopeTables& t, const Tensor& k_cache,
                  const Tensor& v_cache, const Tensor& slots, cudaStream_t stream) {
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
  launch_kernel(qk_norm_rope_store_kernel<T>, grid, kWarps * 32, 0, stream, a);
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_qk_norm_rope_store(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_norm,
                               const Tensor& k_norm, float eps, const Tensor& positions, const RopeTables& t,
                               const Tensor& k_cache, const Tensor& v_cache, const Tensor& slots, cudaStream_t stream) {
  if (q.size(0) == 0) return;
  SEAM_DISPATCH_FLOAT_TYPES(q.dtype, T, "qk_norm_rope_store", [&] {
    launch_typed<T>(q, k, v, q_norm, k_norm, eps, positions, t, k_cache, v_cache, slots, stream);
  });
}

}  // namespace seam::cuda
