// The expert-indexed GEMV (gemv_experts.h): gemv.cu's kernel body (gemv_kernel.cuh) with slot
// blockIdx.y's expert matrix, one launch for every (token, expert) slot of a batch-1 MoE layer.
#include "backend/cuda/gemv_experts.h"

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/diagnostic_switch.h"
#include "backend/cuda/gemv_combine_tail.cuh"
#include "backend/cuda/gemv_kernel.cuh"
#include "backend/cuda/gemv_slices.h"
#include "backend/cuda/moe_common.cuh"

#include <atomic>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>

namespace seam::cuda {

namespace {

using namespace gemv_detail;

std::atomic<int64_t> g_combine_launches{0};  // gemv_experts_combine_launches()

// The expert-indexed GEMV (launch_gemv_experts): slot blockIdx.y's expert picks the weight
// matrix, then the plain body runs as for a dense projection. The ids are the previous kernel's
// output (moe_route), so nothing is loaded before the PDL wait (early_load is off). MINB: the
// resident blocks an SM asked of the compiler. The offset pointers cost registers: unbounded, the
// plain pair takes 70-72 against the dense kernel's 64 (three blocks an SM instead of four); asked
// for four it fits 64 with 4-20 bytes spilled (ptxas -v). experts_min_blocks picks which.
template <typename T, typename TO, int S, int EPI, int PU, int MINB>
__global__ void __launch_bounds__(kWarps * 32, MINB) gemv_experts_kernel(GemvArgs<T, TO> a) {
  pdl_begin();
  const int64_t slot = blockIdx.y;
  a.w += expert_of(a.expert_ids, slot, a.n_experts) * a.expert_stride;
  a.x += slot / a.x_slot_div * a.x_slot_stride;
  a.out += slot * a.out_slot_stride;
  gemv_body<T, TO, 1, S, kNormNone, EPI, PU>(a);
}

// gemv_experts_kernel's plain products (into float32) with moe_combine folded in: the last of the
// k blocks of a token's output tile (gemv_combine_tail.cuh) sums the k slots' rows of that tile in
// slot order and adds them to combine_out, as moe_combine_vec_kernel does (the moe_combine launch
// drops out). The products are gemv_experts_kernel's, the same slices and epilogue.
template <typename T, int S, int EPI, int PU, int MINB>
__global__ void __launch_bounds__(kWarps * 32, MINB) gemv_experts_combine_kernel(GemvArgs<T, float> a) {
  pdl_begin();
  const int64_t slot = blockIdx.y;
  const float* y = a.out;  // every slot's products, [n_slots, out_slot_stride]
  a.w += expert_of(a.expert_ids, slot, a.n_experts) * a.expert_stride;
  a.x += slot / a.x_slot_div * a.x_slot_stride;
  a.out += slot * a.out_slot_stride;
  gemv_body<T, float, 1, S, kNormNone, EPI, PU>(a);
  constexpr int kItems = kWarps / S, kRowsPerItem = EPI == kEpiPlain ? 1 : 2;
  combine_tail<T, kItems, kRowsPerItem>(y, a.out_slot_stride, a.combine_out, a.combine_out_stride, a.combine_weights,
                                        a.combine_k, a.n_out, a.combine_counters);
}

// The experts' kernel at S slices: GLU (into x's dtype) at the pair unroll, as the dense GLU;
// plain products (into float32) two rows a warp at kPairUnroll or one at kUnroll. Only these
// pairings are instantiated (gemv_experts_applies).
// The GLU (64 registers at unroll 2, 88-90 at 4) and the single rows (54-56) fit four blocks
// without a bound; the plain pair is bounded by SEAM_GEMV_EXPERTS_MIN_BLOCKS: 4 (default: the
// dense kernel's occupancy, a few spilled bytes) or 1 (no bound: no spills, three blocks an SM),
// a diagnostic A/B until measured.
int experts_min_blocks() {
  static const int b = env_choice("SEAM_GEMV_EXPERTS_MIN_BLOCKS", 4, {1, 4});
  return b;
}

template <typename T, typename TO, int S>
GemvKernel<T, TO> experts_kernel_of(int epi) {
  if constexpr (std::is_same_v<T, TO>) {
    SEAM_ASSERT(epi == kEpiGlu);
    return pair_unroll() == 2 ? gemv_experts_kernel<T, TO, S, kEpiGlu, 2, 1>
                              : gemv_experts_kernel<T, TO, S, kEpiGlu, kUnroll, 1>;
  } else {
    SEAM_ASSERT(epi != kEpiGlu);
    if (epi == kEpiPlain) return gemv_experts_kernel<T, TO, S, kEpiPlain, kUnroll, 1>;
    return experts_min_blocks() == 4 ? gemv_experts_kernel<T, TO, S, kEpiPlainPair, kPairUnroll, 4>
                                     : gemv_experts_kernel<T, TO, S, kEpiPlainPair, kPairUnroll, 1>;
  }
}

// The combine-folded instance of experts_kernel_of's plain kernels (the same unroll and bound).
template <typename T, int S>
GemvKernel<T, float> experts_combine_kernel_of(int epi) {
  if (epi == kEpiPlain) return gemv_experts_combine_kernel<T, S, kEpiPlain, kUnroll, 1>;
  return experts_min_blocks() == 4 ? gemv_experts_combine_kernel<T, S, kEpiPlainPair, kPairUnroll, 4>
                                   : gemv_experts_combine_kernel<T, S, kEpiPlainPair, kPairUnroll, 1>;
}
template <typename T>
GemvKernel<T, float> experts_combine_kernel_of(int slices, int epi) {
  switch (slices) {
    case 1: return experts_combine_kernel_of<T, 1>(epi);
    case 2: return experts_combine_kernel_of<T, 2>(epi);
    case 4: return experts_combine_kernel_of<T, 4>(epi);
    default: return experts_combine_kernel_of<T, 8>(epi);
  }
}

template <typename T, typename TO>
GemvKernel<T, TO> experts_kernel_of(int slices, int epi) {
  switch (slices) {
    case 1: return experts_kernel_of<T, TO, 1>(epi);
    case 2: return experts_kernel_of<T, TO, 2>(epi);
    case 4: return experts_kernel_of<T, TO, 4>(epi);
    default: return experts_kernel_of<T, TO, 8>(epi);
  }
}

// K slices of an expert launch: the dense rule over its whole grid (n_slots x the items of one
// expert), at the experts kernel's occupancy; once per shape, as slices_for.
template <typename T, typename TO>
int experts_slices_for(int n_out, int n_slots, int n_in, int epi) {
  static std::mutex mu;
  static std::map<std::tuple<int, int, int, int>, int> chosen;  // (n_out, n_slots, n_in, epi) -> slices
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_tuple(n_out, n_slots, n_in, epi);
  if (auto it = chosen.find(key); it != chosen.end()) return it->second;
  GemvSliceQuery q;
  q.n_items = n_out * n_slots;
  q.n_vec = n_in / 8;
  q.sweep_vecs = 32 * row_unroll(epi);
  q.max_slices = max_slices_cap();
  const int slices = choose_gemv_slices(
      q, [&](int s) { return resident_warps(reinterpret_cast<const void*>(experts_kernel_of<T, TO>(s, epi)), 0); });
  chosen.emplace(key, slices);
  return slices;
}

template <typename T, typename TO>
bool launch_experts_typed(const Tensor& out, const Tensor& x, bool x_per_slot, const Tensor& w, const Tensor& ids,
                          bool glu, cudaStream_t stream, const GemvExpertsCombine* combine) {
  const int n_slots = int(ids.numel()), rows = int(w.size(1)), n_in = int(w.size(2));
  GemvArgs<T, TO> a{};
  a.out = out.ptr<TO>();
  a.x = x.ptr<T>();
  a.w = w.ptr<T>();
  a.early_load = false;  // the weights' address depends on the ids: after the PDL wait
  a.expert_ids = ids.ptr<int32_t>();
  a.n_experts = int(w.size(0));
  a.x_slot_div = x_per_slot ? 1 : int(ids.size(1));  // x's row for slot s: s, or its token s / k
  a.expert_stride = int64_t(rows) * n_in;
  a.x_slot_stride = x.stride[0];
  a.out_slot_stride = out.stride[0];
  // Plain products pair rows by the dense rule over all the slots' rows (halving the warps pays
  // where the whole grid is large); a pair stays within one expert's matrix.
  int epi = kEpiGlu;
  if (!glu) epi = rows % 2 == 0 && plain_pair(int64_t(rows) * n_slots, n_in, sizeof(T)) ? kEpiPlainPair : kEpiPlain;
  a.n_out = epi == kEpiPlain ? rows : rows / 2;
  a.n_in = n_in;
  const int slices = experts_slices_for<T, TO>(a.n_out, n_slots, n_in, epi);
  const dim3 grid(unsigned(div_up(a.n_out, kWarps / slices)), unsigned(n_slots));
  if constexpr (std::is_same_v<TO, float>) {
    // The folded combine: a counter per (token, tile); the products as below (same slices).
    if (combine != nullptr && x_per_slot && int64_t(ids.size(0)) * grid.x <= combine->n_counters) {
      a.combine_out = combine->out.ptr<T>();
      a.combine_out_stride = combine->out.stride[0];
      a.combine_weights = combine->topk_weights.ptr<float>();
      a.combine_counters = combine->counters;
      a.combine_k = int(ids.size(1));
      launch_kernel(experts_combine_kernel_of<T>(slices, epi), grid, dim3(kWarps * 32), 0, stream, a);
      SEAM_CUDA_CHECK_LAUNCH();
      g_combine_launches.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  launch_kernel(experts_kernel_of<T, TO>(slices, epi), grid, dim3(kWarps * 32), 0, stream, a);
  SEAM_CUDA_CHECK_LAUNCH();
  return false;
}

}  // namespace

bool gemv_experts_applies(const Tensor& out, const Tensor& x, bool x_per_slot, const Tensor& w, const Tensor& ids,
                          bool glu) {
  const bool half = x.dtype == DType::bf16 || x.dtype == DType::f16;
  if (!half || w.dtype != x.dtype || w.ndim != 3 || !w.contiguous() || !aligned16(w.data) || w.size(2) % 8 != 0 ||
      ids.dtype != DType::i32 || ids.ndim != 2 || !ids.contiguous() || x.ndim != 2 || out.ndim != 2)
    return false;
  const int64_t n_slots = ids.numel(), rows = w.size(1), n_in = w.size(2);
  const int64_t n_out = glu ? rows / 2 : rows;
  if (n_slots < 1 || n_slots > 65535 || w.size(0) < 1 || w.size(0) * rows >= (int64_t(1) << 31) ||
      n_out * n_slots >= (int64_t(1) << 31) ||  // the slice rule's items
      n_in >= (int64_t(1) << 31) || x.size(1) != n_in || !rows_vectorizable(x, n_in) ||
      x.size(0) < (x_per_slot ? n_slots : ids.size(0)) || out.size(0) < n_slots || out.size(1) != n_out ||
      out.stride[1] != 1)
    return false;
  return glu ? rows % 2 == 0 && out.dtype == x.dtype : out.dtype == DType::f32;
}

bool launch_gemv_experts(const Tensor& out, const Tensor& x, bool x_per_slot, const Tensor& w, const Tensor& ids,
                         bool glu, cudaStream_t stream, const GemvExpertsCombine* combine) {
  SEAM_ASSERT(gemv_experts_applies(out, x, x_per_slot, w, ids, glu));
  if (w.size(1) == 0) return false;
  if (combine != nullptr) {
    const GemvExpertsCombine& c = *combine;
    const int64_t n = ids.size(0), k = ids.size(1);
    const bool ok = !glu && c.counters != nullptr && c.out.defined() && c.out.dtype == x.dtype && c.out.ndim == 2 &&
                    c.out.size(0) == n && c.out.size(1) == w.size(1) && c.out.stride[1] == 1 &&
                    c.topk_weights.defined() && c.topk_weights.dtype == DType::f32 && c.topk_weights.ndim == 2 &&
                    c.topk_weights.size(0) == n && c.topk_weights.size(1) == k && c.topk_weights.contiguous();
    if (!ok) combine = nullptr;
  }
  if (x.dtype == DType::bf16) {
    if (glu) return launch_experts_typed<__nv_bfloat16, __nv_bfloat16>(out, x, x_per_slot, w, ids, glu, stream, nullptr);
    return launch_experts_typed<__nv_bfloat16, float>(out, x, x_per_slot, w, ids, glu, stream, combine);
  }
  if (glu) return launch_experts_typed<__half, __half>(out, x, x_per_slot, w, ids, glu, stream, nullptr);
  return launch_experts_typed<__half, float>(out, x, x_per_slot, w, ids, glu, stream, combine);
}

int64_t gemv_experts_combine_launches() { return g_combine_launches.load(std::memory_order_relaxed); }

}  // namespace seam::cuda
