// The streamed skinny MoE kernel's launchers (moe_skinny_mma_stream.h): the variant (kCfgs), its
// shared memory, the grid, and the combine folded into down where the variant says. The kernel and
// its layout: moe_skinny_mma_stream_kernel.cuh.
#include "backend/cuda/moe_skinny_mma_stream.h"

#include <algorithm>
#include <utility>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/diagnostic_switch.h"
#include "backend/cuda/flash_mma.cuh"
#include "backend/cuda/moe_combine.h"
#include "backend/cuda/moe_common.cuh"
#include "backend/cuda/moe_skinny.h"
#include "backend/cuda/moe_skinny_args.cuh"
#include "backend/cuda/moe_skinny_mma.h"
#include "backend/cuda/moe_skinny_mma_stream_kernel.cuh"
#include "backend/cuda/moe_stream_variants.cuh"

namespace seam::cuda {

namespace {

using namespace skinny_stream_detail;  // the kernel, its constants and the variants' table

// Up to kMaxSkinnySlots slots (57 KB of shared memory a block at 5 stages), and the largest
// shared-memory carve-out: at 512 slots (43 KB a block, 96 registers a thread) 5 blocks an SM,
// 20 warps with 8 KB each in flight. What L1 is left holds the rows a block's 4 warps read in
// step; the rest of the x / act reads (~1/4 of the weight bytes at 4 slots an expert) are L2 hits.
// Staged x (x_rows) adds x_rows x K x 2 B, K known at launch only: those variants' limit is the
// device's opt-in maximum (smem_optin_max, cuda_common.cuh; the limit alone costs no occupancy,
// the launch's own size does).

// The dynamic shared memory the staged-x variants may ask for: the opt-in maximum less the
// kernels' static shared memory (dynamic + static must fit the opt-in maximum; asking for the
// whole of it is cudaErrorInvalidValue, the first H200 run of these variants).
int smem_dynamic_max() {
  static const int bytes = [] {
    int static_max = 0;
    for (const void* kernel :
         {reinterpret_cast<const void*>(moe_skinny_mma_stream_kernel<__nv_bfloat16, true, 0>),
          reinterpret_cast<const void*>(moe_skinny_mma_stream_kernel<__nv_bfloat16, false, 0>)}) {
      cudaFuncAttributes attr{};
      SEAM_CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
      static_max = std::max(static_max, int(attr.sharedSizeBytes));
    }
    return smem_optin_max() - static_max - 1024;  // 1 KB of slack for the other instantiations' statics
  }();
  return bytes;
}

template <typename T, int V>
void set_smem_limit() {
  once_per_device(reinterpret_cast<const void*>(moe_skinny_mma_stream_kernel<T, true, V>), [] {
    const int bytes =
        kCfgs[V].x_rows > 0 ? smem_dynamic_max() : int(ring_bytes<V>() + size_t(kMaxSkinnySlots) * sizeof(int));
    for (auto* kernel : {moe_skinny_mma_stream_kernel<T, true, V>, moe_skinny_mma_stream_kernel<T, false, V>}) {
      SEAM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
      SEAM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                           int(cudaSharedmemCarveoutMaxShared)));
    }
  });
}

// The combine folded into down: its output, weights and n counters (MoeScratch::index).
struct Fold {
  const Tensor* out;
  const Tensor* weights;
  int* counters;
};

template <typename T, int V>
void launch_stages(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down, const Tensor& topk_ids,
                   const MoeScratch& s, int which, const Fold* fold, cudaStream_t stream) {
  set_smem_limit<T, V>();
  const int64_t n = x.size(0);
  const int n_experts = int(w_gate_up.size(0)), inter = int(w_gate_up.size(1) / 2), hidden = int(w_gate_up.size(2));
  const int k = int(topk_ids.size(1)), n_slots = int(n * k);
  const size_t smem = ring_bytes<V>() + size_t(n_slots) * sizeof(int);  // + the kernel's staged rows
  const bool direct = skinny_direct(n_slots, n_experts);
  const unsigned grid_rows = unsigned(direct ? n_experts : std::min(n_experts, n_slots));
  if (which & 1) {
    SkinnyMoeArgs<T> gate_up{s.act.ptr<T>(), s.act.stride[0], x.ptr<T>(), x.stride[0], w_gate_up.ptr<T>(),
                             topk_ids.ptr<int32_t>(), n_slots, n_experts, k, inter, hidden, direct};
    if (fold != nullptr) gate_up.counters = fold->counters, gate_up.n_tokens = int(n);
    const int tiles = inter / kOut<true>;
    launch_kernel(moe_skinny_mma_stream_kernel<T, true, V>,
                  dim3(unsigned(div_up(tiles, kWarps * kTilesPerWarp<true, V>)), grid_rows), dim3(kThreads),
                  smem + x_stage_bytes(V, hidden), stream, gate_up);
    SEAM_CUDA_CHECK_LAUNCH();
  }
  if (which & 2) {
    SkinnyMoeArgs<T> down{s.expert_out.ptr<T>(), hidden, s.act.ptr<T>(), s.act.stride[0], w_down.ptr<T>(),
                          topk_ids.ptr<int32_t>(), n_slots, n_experts, k, hidden, inter, direct};
    if (fold != nullptr) {
      down.counters = fold->counters;
      down.n_tokens = int(n);
      down.comb_out = fold->out->ptr<T>();
      down.comb_stride = fold->out->stride[0];
      down.weights = fold->weights->ptr<float>();
    }
    const int tiles = hidden / kOut<false>;
    launch_kernel(moe_skinny_mma_stream_kernel<T, false, V>,
                  dim3(unsigned(div_up(tiles, kWarps * kTilesPerWarp<false, V>)), grid_rows), dim3(kThreads),
                  smem + x_stage_bytes(V, inter), stream, down);
    SEAM_CUDA_CHECK_LAUNCH();
  }
}

// The variant's instantiation: variant is a runtime index into kCfgs.
template <typename T, int... Vs>
void launch_variant(std::integer_sequence<int, Vs...>, int variant, const Tensor& x, const Tensor& w_gate_up,
                    const Tensor& w_down, const Tensor& topk_ids, const MoeScratch& s, int which, const Fold* fold,
                    cudaStream_t stream) {
  (void)((Vs == variant ? (launch_stages<T, Vs>(x, w_gate_up, w_down, topk_ids, s, which, fold, stream), true)
                        : false) ||
         ...);
}

void dispatch_one(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down, const Tensor& topk_ids,
                  const MoeScratch& s, int which, int variant, const Fold* fold, cudaStream_t stream) {
  SEAM_CHECK(variant >= 0 && variant < kNumCfgs, "moe_skinny_mma_stream: no variant ", variant);
  if (kCfgs[variant].x_rows > 0) {  // staged rows past the device's shared memory: variant 0, the same bits
    // The larger staged row of the kernels launched (which: 1 gate_up, 2 down, 3 both).
    const int64_t n_in = std::max((which & 1) ? w_gate_up.size(2) : int64_t(0), (which & 2) ? w_down.size(2) : int64_t(0));
    const size_t bytes =
        ring_bytes_of(variant) + x_stage_bytes(variant, int(n_in)) + size_t(topk_ids.numel()) * sizeof(int);
    if (bytes > size_t(smem_dynamic_max())) variant = 0;
  }
  const auto all = std::make_integer_sequence<int, kNumCfgs>{};
  if (x.dtype == DType::bf16)
    launch_variant<__nv_bfloat16>(all, variant, x, w_gate_up, w_down, topk_ids, s, which, fold, stream);
  else
    launch_variant<__half>(all, variant, x, w_gate_up, w_down, topk_ids, s, which, fold, stream);
}

// variant >= 0: both products in it; -1: the switches (gate_up SEAM_MOE_STREAM_VARIANT, down
// SEAM_MOE_STREAM_DOWN_VARIANT, which defaults to the same). out / weights: the whole op (both
// products, then the combine: folded into down where its variant says so and the scratch has
// the counters), else null (the products alone). Returns whether the combine was folded.
bool dispatch_stages(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down, const Tensor& topk_ids,
                     const MoeScratch& s, int which, int variant, const Tensor* out, const Tensor* weights,
                     cudaStream_t stream) {
  const int gu = variant >= 0 ? variant : moe_skinny_mma_stream_variant();
  const int dn = variant >= 0 ? variant : moe_skinny_mma_stream_down_variant();
  const int64_t n = x.size(0);
  const bool fold_ok = out != nullptr && weights != nullptr && which == 3 && kCfgs[dn].fuse && s.index.defined() &&
                       s.index.dtype == DType::i32 && s.index.numel() >= n && aligned16(s.expert_out.data) &&
                       weights->dtype == DType::f32 && weights->contiguous();
  const Fold fold{out, weights, fold_ok ? s.index.ptr<int32_t>() : nullptr};
  if (which & 1) dispatch_one(x, w_gate_up, w_down, topk_ids, s, 1, gu, fold_ok ? &fold : nullptr, stream);
  if (which & 2) dispatch_one(x, w_gate_up, w_down, topk_ids, s, 2, dn, fold_ok ? &fold : nullptr, stream);
  return fold_ok;
}

}  // namespace

int moe_skinny_mma_stream_variant() {
  static const int v = env_int("SEAM_MOE_STREAM_VARIANT", 0, 0, kNumCfgs - 1);
  return v;
}

int moe_skinny_mma_stream_down_variant() {
  static const int v = env_int("SEAM_MOE_STREAM_DOWN_VARIANT", moe_skinny_mma_stream_variant(), 0, kNumCfgs - 1);
  return v;
}

int moe_skinny_mma_stream_variants() { return kNumCfgs; }

const char* moe_skinny_mma_stream_variant_name(int variant) {
  SEAM_CHECK(variant >= 0 && variant < kNumCfgs, "moe_skinny_mma_stream: no variant ", variant);
  return kCfgs[variant].name;
}

bool moe_skinny_mma_stream_applies(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                                   const Tensor& topk_ids, const MoeScratch& s) {
  // Tiles of 8 (gated) and 16 (down) features: whole wherever inter and hidden are multiples of 32.
  return moe_skinny_mma_applies(x, w_gate_up, w_down, topk_ids, s) && w_gate_up.size(0) <= 65535;
}

void launch_moe_skinny_mma_stream_stages(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                                         const Tensor& topk_ids, const MoeScratch& scratch, int which,
                                         cudaStream_t stream, int variant) {
  SEAM_ASSERT(moe_skinny_mma_stream_applies(x, w_gate_up, w_down, topk_ids, scratch));
  if (x.size(0) == 0) return;
  dispatch_stages(x, w_gate_up, w_down, topk_ids, scratch, which, variant, nullptr, nullptr, stream);
}

void launch_moe_experts_skinny_mma_stream(const Tensor& out, const Tensor& x, const Tensor& w_gate_up,
                                          const Tensor& w_down, const Tensor& topk_ids, const Tensor& topk_weights,
                                          const MoeScratch& scratch, cudaStream_t stream, int variant) {
  SEAM_ASSERT(moe_skinny_mma_stream_applies(x, w_gate_up, w_down, topk_ids, scratch));
  if (x.size(0) == 0) return;
  if (!dispatch_stages(x, w_gate_up, w_down, topk_ids, scratch, 3, variant, &out, &topk_weights, stream))
    launch_moe_combine(out, scratch.expert_out, topk_weights, stream);
}

}  // namespace seam::cuda
