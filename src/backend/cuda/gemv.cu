// launch_gemv (gemv.h): the dense decode GEMV's kernels around gemv_kernel.cuh's body, the post-norm,
// route and q/k-norm fusions (their tails: gemv_post_norm.cuh, gemv_route_tail.cuh,
// gemv_qk_norm_tail.cuh), and the choice of instantiation and K slices per shape.
#include "backend/cuda/gemv.h"

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/diagnostic_switch.h"
#include "backend/cuda/gemv_kernel.cuh"
#include "backend/cuda/gemv_post_norm.cuh"
#include "backend/cuda/gemv_qk_norm_tail.cuh"
#include "backend/cuda/gemv_route_tail.cuh"
#include "backend/cuda/gemv_slices.h"
#include "backend/cuda/moe_route.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>

namespace seam::cuda {

namespace {

using namespace gemv_detail;

std::atomic<int64_t> g_post_norm_launches{0};  // gemv_post_norm_launches()
std::atomic<int64_t> g_route_launches{0};      // gemv_route_launches()
std::atomic<int64_t> g_qk_norm_launches{0};    // gemv_qk_norm_launches()

template <typename T, typename TO, int M, int S, int NORM, int EPI, int PU = kUnroll>
__global__ void __launch_bounds__(kWarps * 32) gemv_kernel(GemvArgs<T, TO> a) {
  gemv_body<T, TO, M, S, NORM, EPI, PU>(a);
}

// A plain projection of one row (o_proj, down_proj) and Gemma's post-norm after it:
// out = x @ w^T (+ bias) exactly as gemv_kernel writes it, then residual += rms_norm(out) *
// post_w exactly as rms_norm_add_kernel computes it (same 256 threads, same vectors, same
// order of the sums: bit-identical to launch_gemv + launch_rms_norm_add). The rms_norm_add
// launch drops out; the last block to finish applies the norm (gemv_post_norm.cuh).
template <typename T, int S, int EPI, int PU>
__global__ void __launch_bounds__(kWarps * 32) gemv_post_norm_kernel(GemvArgs<T, T> a) {
  static_assert(kWarps * 32 == 256, "the tail matches rms_norm_add's 256-thread block");
  gemv_body<T, T, 1, S, kNormNone, EPI, PU>(a);
  post_norm_tail<T>(a.out, a.residual, a.post_w, a.post_eps, a.post_n, a.post_counter);
}

// A mixture-of-experts router of one row and its routing (GemvFusion::route): the logits exactly
// as gemv_kernel writes them, then the last block to finish routes them (gemv_route_tail.cuh)
// exactly as moe_route_warp_kernel: the moe_route launch drops out.
template <typename T, int S, int NORM, int EPI, int PU>
__global__ void __launch_bounds__(kWarps * 32) gemv_route_kernel(GemvArgs<T, T> a) {
  gemv_body<T, T, 1, S, NORM, EPI, PU>(a);
  route_tail<T>(a.out, a.route_ids, a.route_weights, a.route_experts, a.route_k, a.route_renorm, a.route_counter);
}

// The qkv projection of one row of a q/k-norm model (GemvFusion::qk_norm): rms_norm_linear's
// product exactly as gemv_kernel writes it (inline norm), then the last block to finish each head
// finishes it as qk_norm_rope_store's kernel does (gemv_qk_norm_tail.cuh): that launch drops out.
template <typename T, int S, int EPI, int PU>
__global__ void __launch_bounds__(kWarps * 32) gemv_qk_norm_kernel(GemvArgs<T, T> a) {
  gemv_body<T, T, 1, S, kNormInline, EPI, PU>(a);
  QkTail<T> t;
  t.qkv = a.out;
  t.q_norm = a.q_norm_w;
  t.k_norm = a.k_norm_w;
  t.eps = a.eps;
  t.n_heads = a.n_heads;
  t.n_kv_heads = a.n_kv_heads;
  t.d = a.head_dim;
  t.half = a.rot_half;
  t.positions = a.positions;
  t.angles = a.angles;
  t.k_cache = a.k_cache;
  t.v_cache = a.v_cache;
  t.slots = a.slots;
  t.n_slots = a.n_slots;
  t.counters = a.head_counters;
  constexpr int kItems = kWarps / S, kRowsPerItem = EPI == kEpiPlain ? 1 : 2;
  qk_norm_tail<T, kItems, kRowsPerItem>(t, a.n_out);
}

// The paired epilogues (GLU, ROPE) are fused only where a feature pair needs at most this many
// K slices; above it the op runs as norm-fused GEMV plus its own kernel. A pair is two rows a
// warp, so with many slices every warp holds little work and the fused kernel's latency can
// exceed the kernel it saves. Measured (H200, batch-1 decode step, with the earlier slice rule
// that split 1B's qkv+RoPE pairs 8 ways): Llama-3.2-1B 1.036 ms with every pair fused, 1.008 ms
// at 4, 1.026 ms at 1; Llama-3.1-8B 4.329 ms at 8, 4.407 ms at 2; Qwen2.5-0.5B 0.707 ms fused,
// 0.721 at 1. The current slices_for gives pairs at most 2 slices on these shapes, so all fuse.
// SEAM_GEMV_PAIR_MAX_SLICES (1, 2, 4 or 8) overrides it (diagnostic).
constexpr int kPairMaxSlices = 4;
int pair_fusion_max_slices() {
  static const int n = env_choice("SEAM_GEMV_PAIR_MAX_SLICES", kPairMaxSlices, {1, 2, 4, 8});
  return n;
}

// SEAM_GEMV_EARLY_LOAD=0 keeps every weight load behind the PDL wait (a diagnostic switch).
bool early_load_enabled() {
  static const bool on = env_choice("SEAM_GEMV_EARLY_LOAD", 1, {0, 1}) == 1;
  return on;
}

// The instantiation a launch with S slices runs: the norm staged only where each block streams
// whole rows of a pair (S = 1). Run 3 measured GLU staged at S = 2 (1B: 24.9 us, 0.5B: 12.0)
// slower than norm + GEMV + SiLU kernels (22.4 / ~10.5), and staging on single rows slower too.
template <typename T, typename TO, int M, int S>
GemvKernel<T, TO> kernel_of(bool norm, int epi) {
  if (epi == kEpiPlainPair)
    return norm ? gemv_kernel<T, TO, M, S, kNormInline, kEpiPlainPair, kPairUnroll>
                : gemv_kernel<T, TO, M, S, kNormNone, kEpiPlainPair, kPairUnroll>;
  if (!norm) return gemv_kernel<T, TO, M, S, kNormNone, kEpiPlain>;
  if constexpr (std::is_same_v<T, TO>) {
    constexpr int kPairNorm = S == 1 ? kNormStaged : kNormInline;
    if (pair_unroll() == 2) {
      if (epi == kEpiGlu) return gemv_kernel<T, TO, M, S, kPairNorm, kEpiGlu, 2>;
      if (epi == kEpiRope) return gemv_kernel<T, TO, M, S, kPairNorm, kEpiRope, 2>;
    }
    if (epi == kEpiGlu) return gemv_kernel<T, TO, M, S, kPairNorm, kEpiGlu>;
    if (epi == kEpiRope) return gemv_kernel<T, TO, M, S, kPairNorm, kEpiRope>;
  }
  return gemv_kernel<T, TO, M, S, kNormInline, kEpiPlain>;
}

template <typename T, typename TO, int M>
GemvKernel<T, TO> kernel_of(int slices, bool norm, int epi) {
  switch (slices) {
    case 1: return kernel_of<T, TO, M, 1>(norm, epi);
    case 2: return kernel_of<T, TO, M, 2>(norm, epi);
    case 4: return kernel_of<T, TO, M, 4>(norm, epi);
    default: return kernel_of<T, TO, M, 8>(norm, epi);
  }
}

// The tail kernels' instantiation at S slices for a plain projection (one row a warp, or the
// plain pair): pick(S, EPI, PU) as integral constants, the same choice for each tail, so each
// tail's product is the instantiation linear's kernel_of would pick.
template <typename Pick>
auto plain_by_slices(int slices, int epi, Pick&& pick) {
  using std::integral_constant;
  const auto one = [&](auto s) {
    return epi == kEpiPlainPair ? pick(s, integral_constant<int, kEpiPlainPair>{}, integral_constant<int, kPairUnroll>{})
                                : pick(s, integral_constant<int, kEpiPlain>{}, integral_constant<int, kUnroll>{});
  };
  switch (slices) {
    case 1: return one(integral_constant<int, 1>{});
    case 2: return one(integral_constant<int, 2>{});
    case 4: return one(integral_constant<int, 4>{});
    default: return one(integral_constant<int, 8>{});
  }
}

// The post-norm kernel of a plain projection at S slices.
template <typename T>
GemvKernel<T, T> post_norm_kernel_of(int slices, int epi) {
  return plain_by_slices(slices, epi, [](auto s, auto e, auto u) -> GemvKernel<T, T> {
    return gemv_post_norm_kernel<T, s(), e(), u()>;
  });
}

// The route kernel of a plain projection at S slices (no norm, so the logits are linear's);
// exact: GemvFusion::normed_out (kNormExact).
template <typename T>
GemvKernel<T, T> route_kernel_of(int slices, int epi, bool exact) {
  return plain_by_slices(slices, epi, [exact](auto s, auto e, auto u) -> GemvKernel<T, T> {
    return exact ? gemv_route_kernel<T, s(), kNormExact, e(), u()> : gemv_route_kernel<T, s(), kNormNone, e(), u()>;
  });
}

// The q/k-norm kernel of the qkv projection at S slices: the instantiations rms_norm_linear's
// kernel_of picks for a plain projection with the inline norm, so qkv is rms_norm_linear's.
template <typename T>
GemvKernel<T, T> qk_norm_kernel_of(int slices, int epi) {
  return plain_by_slices(slices, epi, [](auto s, auto e, auto u) -> GemvKernel<T, T> {
    return gemv_qk_norm_kernel<T, s(), e(), u()>;
  });
}

// Dynamic shared memory of a launch: the staged x * g.
size_t staged_smem(int slices, bool norm, int epi, int M, int n_in, size_t elem) {
  return norm && slices == 1 && (epi == kEpiGlu || epi == kEpiRope) ? size_t(M) * size_t(n_in) * elem : 0;
}

// K slices per item: choose_gemv_slices (gemv_slices.h) over this instantiation's occupancy.
// The choice depends only on the shape and the fusion, and every step launches the same few
// shapes (each also asked by gemv_fusion_applies), so it is made once per shape.
template <typename T, typename TO, int M>
int slices_for(int n_out, int n_in, bool norm, int epi) {
  static std::mutex mu;
  static std::map<std::tuple<int, int, bool, int>, int> chosen;  // (n_out, n_in, norm, epi) -> slices
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_tuple(n_out, n_in, norm, epi);
  if (auto it = chosen.find(key); it != chosen.end()) return it->second;
  GemvSliceQuery q;
  q.n_items = n_out;
  q.n_vec = n_in / 8;
  q.sweep_vecs = 32 * row_unroll(epi);
  q.max_slices = max_slices_cap();
  q.staged_pair = staged_smem(1, norm, epi, M, n_in, sizeof(T)) > 0;
  const int slices = choose_gemv_slices(q, [&](int s) {
    return resident_warps(reinterpret_cast<const void*>(kernel_of<T, TO, M>(s, norm, epi)),
                          staged_smem(s, norm, epi, M, n_in, sizeof(T)));
  });
  chosen.emplace(key, slices);
  return slices;
}

template <typename T, typename TO, int M>
void launch_with_slices(const GemvArgs<T, TO>& a, int slices, int epi, cudaStream_t stream) {
  const bool norm = a.norm_w != nullptr;
  const size_t smem = staged_smem(slices, norm, epi, M, a.n_in, sizeof(T));
  const unsigned grid = div_up(a.n_out, kWarps / slices);
  if constexpr (std::is_same_v<T, TO> && M == 1) {
    if (a.route_counter != nullptr) {  // gemv_fusion_applies: a plain projection; a norm only exact
      const bool exact = a.normed_out != nullptr;
      launch_kernel(route_kernel_of<T>(slices, epi, exact), grid, kWarps * 32, exact ? size_t(a.n_in) * sizeof(T) : 0,
                    stream, a);
      SEAM_CUDA_CHECK_LAUNCH();
      g_route_launches.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (a.head_counters != nullptr) {  // gemv_fusion_applies: a plain projection with the inline norm
      launch_kernel(qk_norm_kernel_of<T>(slices, epi), grid, kWarps * 32, 0, stream, a);
      SEAM_CUDA_CHECK_LAUNCH();
      g_qk_norm_launches.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (a.post_counter != nullptr) {  // gemv_fusion_applies: a plain projection, no input norm
      launch_kernel(post_norm_kernel_of<T>(slices, epi), grid, kWarps * 32, 0, stream, a);
      SEAM_CUDA_CHECK_LAUNCH();
      g_post_norm_launches.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  launch_kernel(kernel_of<T, TO, M>(slices, norm, epi), grid, kWarps * 32, smem, stream, a);
  SEAM_CUDA_CHECK_LAUNCH();
}

template <typename T, typename TO, int M>
void launch_rows(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias, const GemvFusion& f,
                 cudaStream_t stream) {
  GemvArgs<T, TO> a{};
  a.out = out.ptr<TO>();
  a.out_stride = out.stride[0];
  a.x = x.ptr<T>();
  a.x_stride = x.stride[0];
  a.w = w.ptr<T>();
  a.bias = bias.defined() ? bias.ptr<T>() : nullptr;
  a.norm_w = f.norm_weight.defined() ? f.norm_weight.ptr<T>() : nullptr;
  a.eps = f.eps;
  a.accumulate = f.accumulate;
  a.early_load = early_load_enabled();
  a.gelu = f.silu_mul && f.glu_act == Activation::gelu_tanh;
  int epi = kEpiPlain;
  if (f.silu_mul)
    epi = kEpiGlu;
  else if (f.rope_store)
    epi = kEpiRope;
  else if (plain_pair(w.size(0), w.size(1), sizeof(T)))
    epi = kEpiPlainPair;
  a.n_out = int(epi == kEpiPlain ? w.size(0) : w.size(0) / 2);
  a.n_in = int(w.size(1));
  if (f.post_norm.counter != nullptr) {
    // The product's slices are linear()'s (the same key: no norm, this epilogue), so out is
    // bit-identical to linear's.
    a.residual = f.post_norm.residual.ptr<T>();
    a.post_w = f.post_norm.weight.ptr<T>();
    a.post_eps = f.post_norm.eps;
    a.post_n = int(w.size(0));
    a.post_counter = f.post_norm.counter;
  }
  if (f.route.counter != nullptr) {
    a.route_ids = f.route.topk_ids.ptr<int32_t>();
    a.route_weights = f.route.topk_weights.ptr<float>();
    a.route_experts = int(w.size(0));
    a.route_k = int(f.route.topk_ids.size(1));
    a.route_renorm = f.route.renormalize;
    a.route_counter = f.route.counter;
    if (f.normed_out.defined()) a.normed_out = f.normed_out.ptr<T>();
  }
  if (f.rope_store || f.qk_norm.counters != nullptr) {
    const GemvFusion::RopeStore& rs = f.rope;
    a.positions = rs.positions.ptr<int32_t>();
    a.angles = RopeTables(rs.inv_freq, rs.inv_freq_long, rs.long_from, rs.inv_freq_lo, rs.inv_freq_long_lo).angles();
    a.rot_half = int(rs.inv_freq.size(0));
    a.k_cache = reinterpret_cast<T*>(rs.k_cache.data);
    a.v_cache = reinterpret_cast<T*>(rs.v_cache.data);
    a.slots = rs.slots.ptr<int32_t>();
    a.n_slots = rs.k_cache.size(0);
    a.n_heads = rs.n_heads;
    a.n_kv_heads = int(rs.k_cache.size(1));
    a.head_dim = int(rs.k_cache.size(2));
  }
  if (f.qk_norm.counters != nullptr) {
    a.q_norm_w = f.qk_norm.q_norm.ptr<T>();
    a.k_norm_w = f.qk_norm.k_norm.ptr<T>();
    a.head_counters = f.qk_norm.counters;
  }
  // The exact norm takes linear's slices (the product is linear(normed)'s, bit for bit).
  const bool slice_norm = a.norm_w != nullptr && !f.normed_out.defined();
  launch_with_slices<T, TO, M>(a, slices_for<T, TO, M>(a.n_out, a.n_in, slice_norm, epi), epi, stream);
}

// slices_for over the runtime dtypes of one row of x.
int slices_for(DType x, DType out, int n_out, int n_in, bool norm, int epi) {
  if (x == DType::bf16) {
    if (out == DType::f32) return slices_for<__nv_bfloat16, float, 1>(n_out, n_in, norm, epi);
    return slices_for<__nv_bfloat16, __nv_bfloat16, 1>(n_out, n_in, norm, epi);
  }
  if (out == DType::f32) return slices_for<__half, float, 1>(n_out, n_in, norm, epi);
  return slices_for<__half, __half, 1>(n_out, n_in, norm, epi);
}

}  // namespace

bool gemv_applies(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias) {
  static_assert(kGemvMaxRows == 1, "launch_gemv instantiates the kernel for one row of x only");
  const bool half = x.dtype == DType::bf16 || x.dtype == DType::f16;
  const int64_t m = x.ndim == 2 ? x.size(0) : 0;
  return half && w.dtype == x.dtype && (out.dtype == x.dtype || out.dtype == DType::f32) &&
         (!bias.defined() || (bias.dtype == w.dtype && bias.contiguous())) && m >= 1 && m <= kGemvMaxRows &&
         w.ndim == 2 && w.contiguous() && w.size(1) % 8 == 0 && w.size(0) < (int64_t(1) << 31) &&
         w.size(1) < (int64_t(1) << 31) && aligned16(w.data) && rows_vectorizable(x, x.size(1));
}

bool gemv_fusion_applies(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias,
                         const GemvFusion& f) {
  if (!gemv_applies(out, x, w, bias)) return false;
  const int64_t n_in = w.size(1);
  if (f.norm_weight.defined() &&
      !(f.norm_weight.dtype == x.dtype && f.norm_weight.contiguous() && f.norm_weight.numel() == n_in &&
        aligned16(f.norm_weight.data) && n_in * int64_t(dtype_size(x.dtype)) * kGemvMaxRows <= kGemvMaxStagedBytes))
    return false;
  if (f.accumulate && out.dtype != x.dtype) return false;
  if (f.silu_mul && !(f.norm_weight.defined() && !f.accumulate && !bias.defined() && out.dtype == x.dtype &&
                      w.size(0) % 2 == 0 && out.ndim == 2 && out.size(1) == w.size(0) / 2))
    return false;
  if ((f.silu_mul || f.rope_store) &&
      slices_for(x.dtype, out.dtype, int(w.size(0) / 2), int(n_in), true, f.silu_mul ? kEpiGlu : kEpiRope) >
          pair_fusion_max_slices())
    return false;
  if (f.post_norm.counter != nullptr) {
    // One row of a plain projection into x's dtype, then the norm over out's whole row, read back
    // in 16-byte vectors (rms_norm_add's vector path): out, residual and the norm weight
    // contiguous, aligned, of n_out elements, a multiple of a vector.
    const GemvFusion::PostNorm& p = f.post_norm;
    const int64_t n_out = w.size(0), vec = 16 / int64_t(dtype_size(x.dtype));
    if (f.norm_weight.defined() || f.accumulate || f.silu_mul || f.rope_store || out.dtype != x.dtype ||
        x.size(0) != 1 || n_out % vec != 0 || !aligned16(out.data) || out.ndim != 2 || out.size(1) != n_out)
      return false;
    if (!(p.residual.defined() && p.residual.dtype == x.dtype && p.residual.ndim == 2 && p.residual.size(0) == 1 &&
          p.residual.size(1) == n_out && aligned16(p.residual.data) && p.weight.defined() &&
          p.weight.dtype == x.dtype && p.weight.contiguous() && p.weight.numel() == n_out && aligned16(p.weight.data)))
      return false;
  }
  if (f.normed_out.defined() && f.route.counter == nullptr) return false;  // the exact norm: route kernel only
  if (f.route.counter != nullptr) {
    // One row of a plain projection into x's dtype, routed by the warp routine.
    const GemvFusion::Route& r = f.route;
    const int64_t n_experts = w.size(0);
    if (f.norm_weight.defined() != f.normed_out.defined() || f.accumulate || f.silu_mul || f.rope_store ||
        f.post_norm.counter != nullptr || bias.defined() || out.dtype != x.dtype || x.size(0) != 1 || out.ndim != 2 ||
        out.size(0) != 1 || out.size(1) != n_experts || out.stride[1] != 1)
      return false;
    const Tensor& nd = f.normed_out;  // the exact norm writes it in whole vectors, as rms_norm's vector path
    if (nd.defined() && !(nd.dtype == x.dtype && nd.numel() == w.size(1) && nd.size(-1) == w.size(1) &&
                          nd.stride[nd.ndim - 1] == 1 && aligned16(nd.data)))
      return false;
    if (!(r.topk_ids.defined() && r.topk_ids.dtype == DType::i32 && r.topk_ids.ndim == 2 &&
          r.topk_ids.size(0) == 1 && r.topk_ids.contiguous() && r.topk_weights.defined() &&
          r.topk_weights.dtype == DType::f32 && r.topk_weights.ndim == 2 && r.topk_weights.size(0) == 1 &&
          r.topk_weights.size(1) == r.topk_ids.size(1) && r.topk_weights.contiguous()))
      return false;
    const int64_t k = r.topk_ids.size(1);
    if (k < 1 || k > n_experts || !moe_route_warp_applies(n_experts, k)) return false;
  }
  if (f.qk_norm.counters != nullptr) {
    // One row of a plain projection with the inline norm into x's dtype; rope's caches and tables.
    const GemvFusion::RopeStore& rs = f.rope;
    const GemvFusion::QkNorm& qk = f.qk_norm;
    if (!f.norm_weight.defined() || f.rope_store || f.silu_mul || f.accumulate || f.post_norm.counter != nullptr ||
        f.route.counter != nullptr || out.dtype != x.dtype || x.size(0) != 1 || out.ndim != 2 || out.size(0) != 1 ||
        out.size(1) != w.size(0) || out.stride[1] != 1)
      return false;
    const bool caches = rs.k_cache.ndim == 3 && rs.v_cache.ndim == 3 && rs.k_cache.contiguous() &&
                        rs.v_cache.contiguous() && rs.k_cache.dtype == x.dtype && rs.v_cache.dtype == x.dtype &&
                        rs.v_cache.size(0) == rs.k_cache.size(0) && rs.v_cache.size(1) == rs.k_cache.size(1) &&
                        rs.v_cache.size(2) == rs.k_cache.size(2);
    if (!caches) return false;
    const int64_t d = rs.k_cache.size(2), kv = rs.k_cache.size(1);
    if (d % 2 != 0 || d < kWarps || rs.n_heads < 1 || w.size(0) != (rs.n_heads + 2 * kv) * d ||
        rs.n_heads + 2 * kv > qk.n_counters)
      return false;
    for (const Tensor* nw : {&qk.q_norm, &qk.k_norm})
      if (!(nw->defined() && nw->dtype == x.dtype && nw->contiguous() && nw->numel() == d)) return false;
    const int64_t rh = rs.inv_freq.defined() ? rs.inv_freq.size(0) : 0;
    if (rh < 1 || 2 * rh > d || (rs.inv_freq_long.defined() && rs.inv_freq_long.size(0) != rh)) return false;
    for (const Tensor* lo : {&rs.inv_freq_lo, &rs.inv_freq_long_lo})
      if (lo->defined() && lo->size(0) != rh) return false;
    if (!(rs.positions.defined() && rs.positions.numel() >= 1 && rs.slots.defined() && rs.slots.numel() >= 1))
      return false;
  }
  if (f.rope_store) {
    const GemvFusion::RopeStore& rs = f.rope;
    const bool caches = rs.k_cache.ndim == 3 && rs.v_cache.ndim == 3 && rs.k_cache.contiguous() &&
                        rs.v_cache.contiguous() && rs.k_cache.dtype == x.dtype && rs.v_cache.dtype == x.dtype;
    if (!caches || f.silu_mul || f.accumulate || !f.norm_weight.defined() || out.dtype != x.dtype) return false;
    const int64_t d = rs.k_cache.size(2), kv = rs.k_cache.size(1);
    if (d % 2 != 0 || w.size(0) != (rs.n_heads + 2 * kv) * d || rs.v_cache.size(1) != kv || rs.v_cache.size(2) != d ||
        rs.v_cache.size(0) != rs.k_cache.size(0))
      return false;
    const int64_t rh = rs.inv_freq.defined() ? rs.inv_freq.size(0) : 0;
    if (rh < 1 || 2 * rh > d || (rs.inv_freq_long.defined() && rs.inv_freq_long.size(0) != rh)) return false;
    for (const Tensor* lo : {&rs.inv_freq_lo, &rs.inv_freq_long_lo})
      if (lo->defined() && lo->size(0) != rh) return false;
  }
  return true;
}

void launch_gemv(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias, const GemvFusion& f,
                 cudaStream_t stream) {
  SEAM_ASSERT(gemv_fusion_applies(out, x, w, bias, f));
  if (w.size(0) == 0) return;
  // One row of x (kGemvMaxRows): the kernel takes any M, but at 2 rows cuBLASLt was already faster (gemv.h).
  if (x.dtype == DType::bf16) {
    if (out.dtype == DType::f32) return launch_rows<__nv_bfloat16, float, 1>(out, x, w, bias, f, stream);
    return launch_rows<__nv_bfloat16, __nv_bfloat16, 1>(out, x, w, bias, f, stream);
  }
  if (out.dtype == DType::f32) return launch_rows<__half, float, 1>(out, x, w, bias, f, stream);
  launch_rows<__half, __half, 1>(out, x, w, bias, f, stream);
}

int64_t gemv_post_norm_launches() { return g_post_norm_launches.load(std::memory_order_relaxed); }
int64_t gemv_route_launches() { return g_route_launches.load(std::memory_order_relaxed); }
int64_t gemv_qk_norm_launches() { return g_qk_norm_launches.load(std::memory_order_relaxed); }

}  // namespace seam::cuda

