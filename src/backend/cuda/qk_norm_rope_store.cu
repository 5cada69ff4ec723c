#include "backend/cuda/qk_norm_rope_store.h"

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/qk_norm_rope_head.cuh"

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
