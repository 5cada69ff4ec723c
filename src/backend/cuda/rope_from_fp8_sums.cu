#include "backend/cuda/rope_from_fp8_sums.h"

#include <algorithm>
#include <atomic>
#include <type_traits>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/diagnostic_switch.h"
#include "backend/cuda/fp8_scaled_output.cuh"
#include "backend/cuda/kv_fp8.cuh"
#include "backend/cuda/rope_kv_store.cuh"
#include "backend/cuda/rope_rotate.cuh"

namespace seam::cuda {

namespace {

using namespace rope_io;  // Pack, KvDest, put, Tables, tables_of (rope_kv_store.cuh)

// Where rope_from_sums_kernel reads q, k and v: cuBLASLt's unscaled float32 sums of the FP8 qkv
// product (fp8_cublaslt.h), each element scaled and rounded as the scale epilogue does
// (scaled_output, fp8_scaled_output.cuh), so the values are those the decomposition's qkv holds.
template <typename T>
struct QkvSums {
  const float* sums = nullptr;  // [n, width] float32, row i = the launch's token i
  int64_t width = 0;            // (n_heads + 2 n_kv_heads) d
  const float* xs = nullptr;    // [n] the rows' activation scales
  const float* ws = nullptr;    // [width] per-channel weight scales (16-byte aligned)
  const T* bias = nullptr;      // [width] or null
};

// P = 8 elements of columns [col, col + 8) of token tok from the sums (16-byte loads: the
// launcher checks the alignment), as fp8_scale_epilogue.cu's vector kernel computes them.
template <typename T, int P>
__device__ __forceinline__ Pack<T, P> scaled_pack(const QkvSums<T>& s, int64_t tok, int64_t col) {
  static_assert(P == 8, "the sums path moves 8 elements a thread");
  const float4* sp = reinterpret_cast<const float4*>(s.sums + tok * s.width + col);
  const float4* wp = reinterpret_cast<const float4*>(s.ws + col);
  const float4 s0 = sp[0], s1 = sp[1], w0 = wp[0], w1 = wp[1];
  const float sum[8] = {s0.x, s0.y, s0.z, s0.w, s1.x, s1.y, s1.z, s1.w};
  const float wsc[8] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w};
  const float x_s = s.xs[tok];
  Pack<T, P> b{}, r;
  if (s.bias) b = *reinterpret_cast<const Pack<T, P>*>(s.bias + col);
#pragma unroll
  for (int i = 0; i < P; ++i) r.v[i] = scaled_output<T>(sum[i], x_s, wsc[i], s.bias ? &b.v[i] : nullptr, nullptr);
  return r;
}

// The FP8 qkv product's tail (launch_rope_store_kv_from_fp8_sums): rope_kernel's items (P = 8,
// full rotary, so no pass-through dims; STORE) for TOK tokens a block, every load from the sums
// (scaled_pack) and V written into qkv as well as the cache (also where the token's slot is
// skipped), so qkv ends as the decomposition — the scale epilogue, then rope_kernel — leaves it,
// with rope_kernel's arithmetic (the same angles, sincosf and rope_rotate). A thread issues its
// item's loads for all TOK tokens before the tokens' cos / sin are built and the barrier. One
// token a block (448 threads at Llama-3.1-8B's heads) runs at ~2.6 TB/s at 4,096 tokens; 2 or 4
// tokens a block, meant to put more loads in flight, were no faster (from_sums_tokens).
template <typename T, typename KV, int TOK>
__global__ void rope_from_sums_kernel(T* qkv, int64_t stride, int n_heads, int n_kv_heads, int64_t n_tokens,
                                      const int32_t* positions, Tables tb, int d, KvDest<T, KV> kv, QkvSums<T> qs) {
  constexpr int P = 8;
  pdl_begin();
  extern __shared__ float cs[];  // [TOK][2, half]: each token's cos then sin
  const int half = tb.half, groups = half / P;
  const int n_rotate = (n_heads + n_kv_heads) * groups;
  const int n_items = n_rotate + n_kv_heads * (d / P);
  const int64_t tok0 = int64_t(blockIdx.x) * TOK;
  const int64_t slot_width = int64_t(n_kv_heads) * d;
  const int64_t v_col = int64_t(n_heads + n_kv_heads) * d;
  for (int base = 0; base < n_items; base += blockDim.x) {  // uniform: one pass when blockDim >= n_items
    const int it = base + int(threadIdx.x);
    const bool rotate = it < n_rotate, copy = !rotate && it < n_items;
    const int h = rotate ? it / groups : 0, j = rotate ? (it % groups) * P : 0;
    const int e = copy ? (it - n_rotate) * P : 0;  // the V element (copy items)
    Pack<T, P> a[TOK], b[TOK];
    int64_t slot[TOK];
#pragma unroll
    for (int t = 0; t < TOK; ++t) {
      const int64_t tok = tok0 + t;
      slot[t] = -1;
      if (tok >= n_tokens || !(rotate || copy)) continue;
      slot[t] = kv.slots[tok];
      if (rotate) {  // q | k consecutive: head h's columns start at h d
        a[t] = scaled_pack<T, P>(qs, tok, int64_t(h) * d + j);
        b[t] = scaled_pack<T, P>(qs, tok, int64_t(h) * d + j + half);
      } else {
        a[t] = scaled_pack<T, P>(qs, tok, v_col + e);
      }
    }
    if (base == 0) {
      for (int x = threadIdx.x; x < TOK * half; x += blockDim.x) {
        const int t = x / half, jj = x % half;
        if (tok0 + t >= n_tokens) continue;
        float s, c;
        sincosf(tb.angles.angle(positions[tok0 + t], jj), &s, &c);  // rope_angle.h: reduced mod 2 pi in double
        cs[t * 2 * half + jj] = c;
        cs[t * 2 * half + half + jj] = s;
      }
      __syncthreads();
    }
#pragma unroll
    for (int t = 0; t < TOK; ++t) {
      const int64_t tok = tok0 + t;
      if (tok >= n_tokens) continue;
      const bool store = slot[t] >= 0 && slot[t] < kv.n_slots;
      T* row = qkv + tok * stride;
      if (copy) {
        *reinterpret_cast<Pack<T, P>*>(row + v_col + e) = a[t];
        if (store) put<T, KV, P>(kv.v_cache + slot[t] * slot_width + e, a[t], kv.scales.v);
        continue;
      }
      if (!rotate) continue;
      const float* c = cs + t * 2 * half;
#pragma unroll
      for (int i = 0; i < P; ++i) {
        const float x = to_float(a[t].v[i]), y = to_float(b[t].v[i]);
        float r0, r1;
        rope_rotate(x, y, c[j + i], c[half + j + i], r0, r1);  // rope_rotate.cuh: no FMA contraction
        a[t].v[i] = from_float<T>(r0);
        b[t].v[i] = from_float<T>(r1);
      }
      T* v = row + int64_t(h) * d;
      *reinterpret_cast<Pack<T, P>*>(v + j) = a[t];
      *reinterpret_cast<Pack<T, P>*>(v + j + half) = b[t];
      if (store && h >= n_heads) {
        KV* kc = kv.k_cache + slot[t] * slot_width + int64_t(h - n_heads) * d;
        put<T, KV, P>(kc + j, a[t], kv.scales.k);
        put<T, KV, P>(kc + j + half, b[t], kv.scales.k);
      }
    }
  }
}

std::atomic<int64_t> g_from_sums_launches{0};

// SEAM_FP8_QKV_ROPE_TOKENS (1, the default, 2 or 4; a diagnostic switch): tokens a block of
// rope_from_sums_kernel. 2 and 4 measured no faster than 1 on the H200 (FP8 prefill of 4,096,
// interleaved: 58,616 / 58,242 and 58,549 / 58,777 tok/s against 58,914 / 59,079; docs/performance.md).
int from_sums_tokens() {
  static const int tokens = env_choice("SEAM_FP8_QKV_ROPE_TOKENS", 1, {1, 2, 4});
  return tokens;
}

}  // namespace

bool rope_store_kv_from_fp8_sums_applies(const Tensor& qkv, int n_heads, const RopeTables& t, const Tensor& k_cache,
                                         const Tensor& v_cache, const Fp8Weight& w, const Tensor& bias) {
  if (qkv.ndim != 2 || (qkv.dtype != DType::bf16 && qkv.dtype != DType::f16) || qkv.stride[1] != 1 || n_heads <= 0 ||
      k_cache.ndim != 3 || !v_cache.defined() || v_cache.dtype != k_cache.dtype || !t.inv_freq.defined())
    return false;
  const int64_t n_kv = k_cache.size(1), d = k_cache.size(2), half = t.inv_freq.size(0);
  const int64_t width = (n_heads + 2 * n_kv) * d;
  const int64_t kv_elem = k_cache.dtype == DType::fp8_e4m3 ? 1 : int64_t(dtype_size(qkv.dtype));
  if (k_cache.dtype != DType::fp8_e4m3 && k_cache.dtype != qkv.dtype) return false;
  // Full rotary, 8 elements a thread (16-byte sums, scale, bias and qkv vectors), per-channel scales.
  return qkv.size(1) == width && 2 * half == d && d % 16 == 0 && aligned16(qkv.data) && qkv.stride[0] % 8 == 0 &&
         reinterpret_cast<uintptr_t>(k_cache.data) % uintptr_t(8 * kv_elem) == 0 &&
         reinterpret_cast<uintptr_t>(v_cache.data) % uintptr_t(8 * kv_elem) == 0 &&
         w.w_scheme == Fp8WeightScheme::per_channel && w.w.defined() && w.w.ndim == 2 && w.w.size(0) == width &&
         w.w_scale.defined() && w.w_scale.numel() == width && aligned16(w.w_scale.data) &&
         (!bias.defined() || (bias.dtype == qkv.dtype && bias.numel() == width && aligned16(bias.data)));
}

int64_t rope_store_kv_from_fp8_sums_launches() { return g_from_sums_launches.load(); }

void launch_rope_store_kv_from_fp8_sums(const Tensor& qkv, int n_heads, const float* sums, const float* xs,
                                        const Fp8Weight& w, const Tensor& bias, const Tensor& positions,
                                        const RopeTables& t, const Tensor& k_cache, const Tensor& v_cache,
                                        const Tensor& slots, cudaStream_t stream, KvScales sc) {
  SEAM_CHECK(rope_store_kv_from_fp8_sums_applies(qkv, n_heads, t, k_cache, v_cache, w, bias),
             "rope_store_kv from fp8 sums: not available for qkv ", qkv.shape_str(), " and k_cache ",
             k_cache.shape_str(), " (16-bit qkv of q | k | v heads, full rotary, head_dim % 16 == 0, aligned rows, "
             "per-channel scales)");
  SEAM_CHECK(aligned16(sums), "rope_store_kv from fp8 sums: sums must be 16-byte aligned");
  const int64_t n = qkv.size(0);
  if (n == 0) return;
  SEAM_CHECK(positions.numel() == n && slots.numel() == n, "rope_store_kv from fp8 sums: ", n, " rows, positions ",
             positions.shape_str(), ", slots ", slots.shape_str());
  ++g_from_sums_launches;
  const int n_kv = int(k_cache.size(1)), d = int(k_cache.size(2));
  const Tables tb = tables_of(t);
  const int tok = from_sums_tokens();
  const size_t smem = size_t(tok) * size_t(2 * tb.half) * sizeof(float);
  const int n_items = (n_heads + n_kv) * (tb.half / 8) + n_kv * (d / 8);
  const int threads = std::min(1024, std::max(32, (n_items + 31) / 32 * 32));
  SEAM_DISPATCH_FLOAT_TYPES(qkv.dtype, T, "rope_store_kv from fp8 sums", [&] {
    if constexpr (sizeof(T) == 2) {
      T* base = qkv.ptr<T>();
      const int64_t stride = qkv.stride[0];
      const QkvSums<T> qs{sums, qkv.size(1), xs, w.w_scale.ptr<const float>(),
                          bias.defined() ? bias.ptr<const T>() : nullptr};
      const auto run = [&](auto kv) {
        using KV = std::remove_pointer_t<decltype(kv.k_cache)>;
        const auto go = [&](auto tok_c) {
          constexpr int TOK = decltype(tok_c)::value;
          launch_kernel(rope_from_sums_kernel<T, KV, TOK>, unsigned((n + TOK - 1) / TOK), threads, smem, stream, base,
                        stride, n_heads, n_kv, n, positions.ptr<int32_t>(), tb, d, kv, qs);
        };
        if (tok == 1) return go(std::integral_constant<int, 1>{});
        if (tok == 4) return go(std::integral_constant<int, 4>{});
        go(std::integral_constant<int, 2>{});
      };
      if (k_cache.dtype == DType::fp8_e4m3)
        run(KvDest<T, Fp8>{nullptr, stride, k_cache.ptr<Fp8>(), v_cache.ptr<Fp8>(), slots.ptr<int32_t>(),
                           k_cache.size(0), sc});
      else
        run(KvDest<T>{nullptr, stride, k_cache.ptr<T>(), v_cache.ptr<T>(), slots.ptr<int32_t>(), k_cache.size(0)});
      SEAM_CUDA_CHECK_LAUNCH();
    } else {
      SEAM_ASSERT(false, "rope_store_kv from fp8 sums: 16-bit qkv only");
    }
  });
}

}  // namespace seam::cuda
