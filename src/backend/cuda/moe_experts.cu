#include "backend/cuda/moe_experts.h"

#include <type_traits>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/moe_common.cuh"
#include "backend/cuda/diagnostic_switch.h"
#include "backend/cuda/moe_experts_grouped.h"
#include "backend/cuda/moe_gathered_gemv.h"
#include "backend/cuda/moe_gathered_stream.h"
#include "backend/cuda/moe_skinny.h"
#include "backend/cuda/moe_skinny_mma.h"
#include "backend/cuda/moe_skinny_mma_stream.h"

namespace seam::cuda {

namespace {

constexpr int kWarps = 8;  // output rows per block, one warp each

// Block (slot, tile): slot = token * k + j picks expert e = ids[slot]; each warp computes one
// intermediate row r of the tile: act[slot][r] = silu(gate_e[r] . x) * (up_e[r] . x), x staged in
// shared memory. V: weight elements per 16-byte load (1: scalar).
template <typename T, int V>
__global__ void moe_gate_up_kernel(T* act, int64_t act_stride, const T* x, int64_t x_stride, const T* w_gate_up,
                                   const int32_t* ids, int n_experts, int k, int inter, int hidden) {
  pdl_begin();
  extern __shared__ float xs[];  // [hidden]
  const int64_t slot = blockIdx.x, token = slot / k;
  const int e = expert_of(ids, slot, n_experts);
  for (int c = threadIdx.x; c < hidden; c += blockDim.x) xs[c] = to_float(x[token * x_stride + c]);
  __syncthreads();
  const int lane = threadIdx.x & 31, r = blockIdx.y * kWarps + (threadIdx.x >> 5);
  if (r >= inter) return;
  const T* g = w_gate_up + (int64_t(e) * 2 * inter + r) * hidden;
  const T* u = g + int64_t(inter) * hidden;
  float gs = 0.f, us = 0.f;
  if constexpr (V > 1) {
    for (int c = lane * V; c < hidden; c += 32 * V) {
      float gv[V], uv[V];
      load_vec<T>(g + c, gv);
      load_vec<T>(u + c, uv);
#pragma unroll
      for (int i = 0; i < V; ++i) {
        gs += gv[i] * xs[c + i];
        us += uv[i] * xs[c + i];
      }
    }
  } else {
    for (int c = lane; c < hidden; c += 32) {
      gs += to_float(g[c]) * xs[c];
      us += to_float(u[c]) * xs[c];
    }
  }
  gs = warp_sum(gs);
  us = warp_sum(us);
  if (lane == 0) act[slot * act_stride + r] = from_float<T>(gs / (1.f + expf(-gs)) * us);
}

// Block (token, tile): each warp computes one output column h: the k chosen experts' down rows
// against their act rows, weighted, summed in order j = 0..k-1, and added to out once.
template <typename T, int V>
__global__ void moe_down_kernel(T* out, int64_t out_stride, const T* act, int64_t act_stride, const T* w_down,
                                const int32_t* ids, const float* weights, int n_experts, int k, int inter,
                                int hidden) {
  pdl_begin();
  const int64_t token = blockIdx.x;
  const int lane = threadIdx.x & 31, h = blockIdx.y * kWarps + (threadIdx.x >> 5);
  if (h >= hidden) return;
  float acc = 0.f;
  for (int j = 0; j < k; ++j) {
    const int64_t slot = token * k + j;
    const int e = expert_of(ids, slot, n_experts);
    const T* d = w_down + (int64_t(e) * hidden + h) * inter;
    const T* a = act + slot * act_stride;
    float y = 0.f;
    if constexpr (V > 1) {
      for (int c = lane * V; c < inter; c += 32 * V) {
        float dv[V], av[V];
        load_vec<T>(d + c, dv);
        load_vec<T>(a + c, av);
#pragma unroll
        for (int i = 0; i < V; ++i) y += dv[i] * av[i];
      }
    } else {
      for (int c = lane; c < inter; c += 32) y += to_float(d[c]) * to_float(a[c]);
    }
    acc += weights[slot] * warp_sum(y);
  }
  if (lane == 0) {
    T* o = out + token * out_stride + h;
    *o = from_float<T>(to_float(*o) + acc);
  }
}

// f(std::integral_constant<int, V>) where the 16-byte weight loads apply, else f(... 1): one launch
// site for the vectorized and the scalar instance of a kernel.
template <int V, typename F>
void with_vec(bool vec, F&& f) {
  if (vec)
    f(std::integral_constant<int, V>{});
  else
    f(std::integral_constant<int, 1>{});
}

template <typename T>
void launch_typed(const Tensor& out, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                  const Tensor& topk_ids, const Tensor& topk_weights, const Tensor& act, cudaStream_t stream) {
  const int64_t n = x.size(0);
  const int n_experts = int(w_gate_up.size(0)), inter = int(w_gate_up.size(1) / 2), hidden = int(w_gate_up.size(2));
  const int k = int(topk_ids.size(1));
  const dim3 block(kWarps * 32);
  const size_t smem = size_t(hidden) * sizeof(float);
  constexpr int V = kVec<T>;
  const bool gu_vec = aligned16(w_gate_up.data) && hidden % V == 0;
  const dim3 gu_grid(unsigned(n * k), div_up(inter, kWarps));
  with_vec<V>(gu_vec, [&](auto v) {
    launch_kernel(moe_gate_up_kernel<T, decltype(v)::value>, gu_grid, block, smem, stream, act.ptr<T>(), act.stride[0],
                  x.ptr<T>(), x.stride[0], w_gate_up.ptr<T>(), topk_ids.ptr<int32_t>(), n_experts, k, inter, hidden);
  });
  SEAM_CUDA_CHECK_LAUNCH();
  const bool dn_vec = aligned16(w_down.data) && inter % V == 0 && rows_vectorizable(act, inter);
  const dim3 dn_grid(unsigned(n), div_up(hidden, kWarps));
  with_vec<V>(dn_vec, [&](auto v) {
    launch_kernel(moe_down_kernel<T, decltype(v)::value>, dn_grid, block, 0, stream, out.ptr<T>(), out.stride[0],
                  act.ptr<T>(), act.stride[0], w_down.ptr<T>(), topk_ids.ptr<int32_t>(), topk_weights.ptr<float>(),
                  n_experts, k, inter, hidden);
  });
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace

namespace {

// Rows x experts from which the grouped GEMMs beat the gathered GEMVs when the skinny path is
// off (SEAM_MOE_SKINNY=0): each expert's weights are then read about once for all its rows
// instead of once per row. 32 rows at top-8 (nearly every expert of 128 hit), 128 rows at top-2.
constexpr int64_t kGroupedMinSlots = 256;

// The skinny path's default limit, in average slots an expert (n * k / n_experts). Measured on the
// H200 (docs/performance.md, fourteenth pass): Qwen3-30B-A3B at 64 rows (4 slots an expert) the
// skinny path on tensor cores took a decode step from 32.1 to 25.8 ms, but at 128 rows (8 slots)
// a 128-token prefill went from 14.5 ms (grouped) to 26.5 ms (skinny): past ~4 slots an expert the
// skinny kernel's per-pass FMA work outgrows the weights' streaming time. Qwen3-30B-A3B: n <= 64;
// Mixtral-8x7B: n <= 16. SEAM_MOE_SKINNY=N overrides.
constexpr int kSkinnyMaxPerExpert = 4;

// The streaming gathered GEMVs (one row) win where an expert's gate/up tile is small enough for
// their whole-tile L2 prefetch and many experts' loads in flight (Qwen3-30B-A3B, 6.3 MB an expert:
// 3.28 -> 3.00 ms a step) and lose where it is large (Mixtral-8x7B, 235 MB an expert: 7.57 ->
// 8.53 ms); the older gathered kernels keep the large ones. The bound sits between the two.
// Above it one row runs on the dense GEMV kernel (gathered_gemv) where that applies: Mixtral's
// experts are the dense 8B MLP's shapes (gate_up 2 x 14336 x 4096, down 4096 x 14336), which
// that kernel streams at ~4 TB/s against the gathered kernels' 3.8 (gate_up) and 2.48 (down).
constexpr int64_t kStreamMaxExpertBytes = int64_t(32) << 20;

}  // namespace

const char* moe_path_name(MoePath p) {
  switch (p) {
    case MoePath::gathered: return "gathered";
    case MoePath::gathered_stream: return "gathered_stream";
    case MoePath::gathered_gemv: return "gathered_gemv";
    case MoePath::skinny: return "skinny";
    case MoePath::skinny_mma: return "skinny_mma";
    case MoePath::skinny_mma_stream: return "skinny_mma_stream";
    case MoePath::grouped: return "grouped";
  }
  return "?";
}

bool moe_path_applies(MoePath p, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                      const Tensor& topk_ids, const MoeScratch& scratch) {
  switch (p) {
    case MoePath::gathered: return true;
    case MoePath::gathered_stream: return moe_gathered_stream_applies(x, w_gate_up, w_down, topk_ids, scratch);
    case MoePath::gathered_gemv: return moe_gathered_gemv_applies(x, w_gate_up, w_down, topk_ids, scratch);
    case MoePath::skinny: return moe_skinny_applies(x, w_gate_up, w_down, topk_ids, scratch);
    case MoePath::skinny_mma: return moe_skinny_mma_applies(x, w_gate_up, w_down, topk_ids, scratch);
    case MoePath::skinny_mma_stream:
      return moe_skinny_mma_stream_applies(x, w_gate_up, w_down, topk_ids, scratch);
    case MoePath::grouped: return moe_grouped_applies(x, w_gate_up, w_down, scratch);
  }
  return false;
}

MoePath choose_moe_path(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down, const Tensor& topk_ids,
                        const MoeScratch& scratch) {
  static const int grouped_mode = env_choice("SEAM_MOE_GROUPED", 1, {0, 1, 2});
  static const int skinny_max = env_int("SEAM_MOE_SKINNY", kSkinnyMaxPerExpert, 0, 4096);
  static const int stream_on = env_choice("SEAM_MOE_GATHER_STREAM", 1, {0, 1});
  // 2: the warp-streamed tensor-core kernels (moe_skinny_mma_stream.h); 1: the first tensor-core
  // version (moe_skinny_mma.h), kept for the A/B; 0: CUDA cores (moe_skinny.h).
  static const int mma_on = env_choice("SEAM_MOE_SKINNY_MMA", 2, {0, 1, 2});
  // One row on the dense GEMV's kernel (moe_gathered_gemv.h) wherever it applies (2, the default):
  // measured on the H200 (2026-12-02, docs/performance.md sixteenth pass) it beat the streaming
  // kernels at both shapes: Mixtral-8x7B 168.9 against 179.9 us (gathered) a layer, 6.56 against
  // 7.08 ms a step; Qwen3-30B-A3B 28.3 against 30.0 us (gathered_stream), 2.91 against 3.00 ms.
  // 1: only experts above kStreamMaxExpertBytes; 0: never (the kernels before it).
  static const int gemv_mode = env_choice("SEAM_MOE_GATHER_GEMV", 2, {0, 1, 2});
  const int64_t n = x.size(0), n_slots = n * topk_ids.size(1), n_experts = w_gate_up.size(0);
  auto applies = [&](MoePath p) { return moe_path_applies(p, x, w_gate_up, w_down, topk_ids, scratch); };
  const int64_t expert_bytes = w_gate_up.numel() / n_experts * int64_t(dtype_size(w_gate_up.dtype));
  const MoePath gathered = stream_on && expert_bytes <= kStreamMaxExpertBytes && applies(MoePath::gathered_stream)
                               ? MoePath::gathered_stream
                               : MoePath::gathered;
  const bool grouped_ok = grouped_mode != 0 && applies(MoePath::grouped);
  if (grouped_mode == 2 && grouped_ok) return MoePath::grouped;
  if (skinny_max > 0 && grouped_mode != 2) {
    // One row reads k experts either way: the gathered GEMVs need no grouping.
    if (n == 1) {
      const bool large = expert_bytes > kStreamMaxExpertBytes;
      if (gemv_mode != 0 && (large || gemv_mode == 2) && applies(MoePath::gathered_gemv)) return MoePath::gathered_gemv;
      return gathered;
    }
    if (n_slots <= int64_t(skinny_max) * n_experts && applies(MoePath::skinny)) {
      if (mma_on == 2 && applies(MoePath::skinny_mma_stream)) return MoePath::skinny_mma_stream;
      return mma_on != 0 && applies(MoePath::skinny_mma) ? MoePath::skinny_mma : MoePath::skinny;
    }
    return grouped_ok ? MoePath::grouped : gathered;
  }
  return grouped_ok && n_slots >= kGroupedMinSlots ? MoePath::grouped : gathered;
}

void launch_moe_experts_path(MoePath path, const Tensor& out, const Tensor& x, const Tensor& w_gate_up,
                             const Tensor& w_down, const Tensor& topk_ids, const Tensor& topk_weights,
                             const MoeScratch& scratch, cudaStream_t stream, const MoeTickets& tickets) {
  if (x.size(0) == 0) return;
  SEAM_CHECK(moe_path_applies(path, x, w_gate_up, w_down, topk_ids, scratch), "moe_experts: the ",
             moe_path_name(path), " path does not apply to these arguments");
  switch (path) {
    case MoePath::gathered_stream:
      return launch_moe_gathered_stream(out, x, w_gate_up, w_down, topk_ids, topk_weights, scratch, stream);
    case MoePath::gathered_gemv:
      return launch_moe_gathered_gemv(out, x, w_gate_up, w_down, topk_ids, topk_weights, scratch, stream, tickets);
    case MoePath::skinny:
      return launch_moe_experts_skinny(out, x, w_gate_up, w_down, topk_ids, topk_weights, scratch, stream);
    case MoePath::skinny_mma:
      return launch_moe_experts_skinny_mma(out, x, w_gate_up, w_down, topk_ids, topk_weights, scratch, stream);
    case MoePath::skinny_mma_stream:
      return launch_moe_experts_skinny_mma_stream(out, x, w_gate_up, w_down, topk_ids, topk_weights, scratch,
                                                  stream);
    case MoePath::grouped:
      return launch_moe_experts_grouped(out, x, w_gate_up, w_down, topk_ids, topk_weights, scratch, stream);
    case MoePath::gathered:
      break;
  }
  const Tensor& act = scratch.act;
  SEAM_CHECK(w_gate_up.size(2) <= kMaxExpertHidden, "moe_experts: hidden ", w_gate_up.size(2), " is above the ",
             kMaxExpertHidden, " the cuda kernels stage in shared memory");
  SEAM_CHECK(w_gate_up.size(1) / 2 <= int64_t(65535) * kWarps && x.size(0) * topk_ids.size(1) <= INT32_MAX,
             "moe_experts: shape out of the kernels' grid");
  SEAM_DISPATCH_FLOAT_TYPES(x.dtype, T, "moe_experts",
                            [&] { launch_typed<T>(out, x, w_gate_up, w_down, topk_ids, topk_weights, act, stream); });
}

void launch_moe_experts(const Tensor& out, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                        const Tensor& topk_ids, const Tensor& topk_weights, const MoeScratch& scratch,
                        cudaStream_t stream, const MoeTickets& tickets) {
  if (x.size(0) == 0) return;
  launch_moe_experts_path(choose_moe_path(x, w_gate_up, w_down, topk_ids, scratch), out, x, w_gate_up, w_down,
                          topk_ids, topk_weights, scratch, stream, tickets);
}

}  // namespace seam::cuda
