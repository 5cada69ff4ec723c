#include "backend/cuda/moe_experts_grouped.h"

#include <mma.h>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/diagnostic_switch.h"
#include "backend/cuda/flash_mma.cuh"
#include "backend/cuda/moe_align.cuh"
#include "backend/cuda/moe_combine.h"
#include "backend/cuda/moe_common.cuh"
#include "backend/cuda/moe_grouped_wgmma.h"
#include "backend/cuda/moe_grouped_wgmma_persistent.h"

namespace seam::cuda {

namespace {

using namespace nvcuda;

constexpr int kBM = 64, kBN = 64, kBK = 32;
constexpr int kLds = kBK + 8;      // shared row pitch of the operand tiles (80 bytes: wmma wants 32-byte tiles)
constexpr int kLdc = kBN + 4;      // shared row pitch of the float results
constexpr int kThreads = 128;      // 4 warps, 2 x 2, each 32 x 32 of the 64 x 64 tile
constexpr int kStages = 3;         // cp.async operand buffers (gate_up: 3 x 15 KB of static shared memory)

// 16 bytes of `src` into `dst`, or zeros.
template <typename T>
__device__ __forceinline__ void load16(T* dst, const T* src, bool valid) {
  *reinterpret_cast<uint4*>(dst) = valid ? *reinterpret_cast<const uint4*>(src) : make_uint4(0, 0, 0, 0);
}

// One grouped GEMM, two uses. Each block is one 64-row M-tile of one expert e (find_tile) and
// 64 output columns c in [blockIdx.y * 64, + 64); C[pos][c] = A(pos) . B_e[c] over n_k, 16-bit
// operands through WMMA, float32 accumulators.
//   kGated (gate_up): A(pos) = x[sorted[pos] / k] (the slot's token), two B operands: gate rows c
//     and up rows n_out + c of w_gate_up[e] ([2 * n_out, n_k]); epilogue act[pos][c] =
//     silu(gate) * up, rounded to T (as a dense MLP's act).
//   else (down): A(pos) = act[pos], one B operand, w_down[e] ([n_out, n_k]); epilogue
//     expert_out[sorted[pos]][c] (scattered back to the slot, for the combine).
template <typename T>
struct GroupedGemm {
  T* out;            // act [n * k, inter] (gated) or expert_out [n * k, hidden]
  int64_t out_stride;
  const T* a;        // x [n, hidden] (gated) or act [n * k, inter]
  int64_t a_stride;
  const T* w;        // w_gate_up [n_experts, 2 * inter, hidden] or w_down [n_experts, hidden, inter]
  const int32_t* index;  // moe_align_kernel's
  int n_experts, k;
  int n_out;         // columns of C: inter (gated) or hidden
  int n_k;           // the reduction: hidden (gated) or inter
};

// Shared memory: the operand tiles, then (reusing them) the float results. Declared as raw bytes
// (a union of 16-bit CUDA types has no trivial constructor).
template <typename T, int kNB>
struct GroupedIn {
  T a[kBM][kLds];
  T b[kNB][kBN][kLds];
};
template <int kNB>
struct GroupedOut {
  float c[kNB][kBM][kLdc];
};

// kStages = 1: each k-step's operands are loaded through registers, then computed (the first
// version). kStages > 1: a cp.async pipeline of kStages operand buffers, kStages - 1 k-steps of
// loads in flight while one is multiplied: a block then has 2-3x the bytes in flight, which the
// H200 trace says the one-stage kernel lacks (~3 us a k-step at 4 and at 256 rows an expert alike:
// latency, not FLOPs). Step `step` lives in buffer step % kStages; every thread commits one
// (possibly empty) cp.async group per k-step, so wait_group<kStages - 2> at step s means groups
// 0..s have landed; the barrier after it publishes them and frees buffer (s - 1) % kStages, which
// the loads of step s + kStages - 1 then fill.
template <typename T, bool kGated, int kStages>
__global__ void __launch_bounds__(kThreads) moe_grouped_gemm_kernel(GroupedGemm<T> g) {
  constexpr int kNB = kGated ? 2 : 1;  // B operands: gate and up, or down
  pdl_begin();
  int e, row0, row_end;
  if (!moe_align::find_tile<kBM>(g.index, g.n_experts, blockIdx.x, e, row0, row_end)) return;
  const int32_t* sorted = g.index + 2 * g.n_experts + 2;
  const int c0 = blockIdx.y * kBN;
  constexpr size_t kIn = sizeof(GroupedIn<T, kNB>) * kStages;
  constexpr size_t kSmem = kIn > sizeof(GroupedOut<kNB>) ? kIn : sizeof(GroupedOut<kNB>);
  static_assert(kSmem <= 48 * 1024, "static shared memory");
  __shared__ __align__(32) unsigned char smem[kSmem];
  auto* stage = reinterpret_cast<GroupedIn<T, kNB>*>(smem);
  auto& res = *reinterpret_cast<GroupedOut<kNB>*>(smem);
  const int tid = threadIdx.x, warp = tid >> 5, wm = warp >> 1, wn = warp & 1;
  // Each thread loads 2 of the 256 16-byte vectors of each 64 x 32 operand tile: rows fixed per block.
  const T* a_src[2];
  const T* b_src[2];
  bool a_ok[2], b_ok[2];
  int r_of[2], v_of[2];
  const int64_t b_part = int64_t(g.n_out) * g.n_k;  // gate -> up within an expert's rows
  for (int i = 0; i < 2; ++i) {
    const int v = tid + i * kThreads, r = v >> 2;
    r_of[i] = r;
    v_of[i] = (v & 3) * 8;
    const int pos = row0 + r;
    a_ok[i] = pos < row_end;
    const int64_t a_row = !a_ok[i] ? 0 : kGated ? sorted[pos] / g.k : pos;
    a_src[i] = g.a + a_row * g.a_stride;
    b_ok[i] = c0 + r < g.n_out;
    b_src[i] = g.w + (int64_t(e) * kNB * g.n_out + (b_ok[i] ? c0 + r : 0)) * g.n_k;
  }
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kNB][2][2];
  for (int b = 0; b < kNB; ++b)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[b][i][j], 0.f);
  // The products of one k-step held in `in`.
  auto multiply = [&](const GroupedIn<T, kNB>& in) {
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb[kNB][2];
      for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(fa[i], &in.a[wm * 32 + i * 16][kk], kLds);
      for (int b = 0; b < kNB; ++b)
        for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(fb[b][j], &in.b[b][wn * 32 + j * 16][kk], kLds);
      for (int b = 0; b < kNB; ++b)
        for (int i = 0; i < 2; ++i)
          for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[b][i][j], fa[i], fb[b][j], acc[b][i][j]);
    }
  };
  if constexpr (kStages == 1) {
    auto& in = stage[0];
    for (int k0 = 0; k0 < g.n_k; k0 += kBK) {
      for (int i = 0; i < 2; ++i) {
        const int col = k0 + v_of[i];
        const bool in_k = col < g.n_k;
        load16(&in.a[r_of[i]][v_of[i]], a_src[i] + col, a_ok[i] && in_k);
        for (int b = 0; b < kNB; ++b)
          load16(&in.b[b][r_of[i]][v_of[i]], b_src[i] + b * b_part + col, b_ok[i] && in_k);
      }
      __syncthreads();
      multiply(in);
      __syncthreads();
    }
  } else {
    const int n_steps = (g.n_k + kBK - 1) / kBK;
    // Step s's operands into its buffer (zero-filled outside the tile), as one commit group.
    auto issue = [&](int step) {
      if (step < n_steps) {
        auto& in = stage[step % kStages];
        const int k0 = step * kBK;
        for (int i = 0; i < 2; ++i) {
          const int col = k0 + v_of[i];
          const bool in_k = col < g.n_k;
          // Out-of-tile vectors read nothing (src-size 0); their address is the row's start, inside w / a.
          flash::cp_async_16(&in.a[r_of[i]][v_of[i]], a_src[i] + (in_k ? col : 0), a_ok[i] && in_k);
          for (int b = 0; b < kNB; ++b)
            flash::cp_async_16(&in.b[b][r_of[i]][v_of[i]], b_src[i] + b * b_part + (in_k ? col : 0), b_ok[i] && in_k);
        }
      }
      flash::cp_async_commit();  // one group per step, empty past the end: the wait count stays exact
    };
    for (int s0 = 0; s0 < kStages - 1; ++s0) issue(s0);
    for (int step = 0; step < n_steps; ++step) {
      flash::cp_async_wait<kStages - 2>();
      __syncthreads();  // step's buffer visible to all; buffer (step - 1) % kStages free
      issue(step + kStages - 1);
      multiply(stage[step % kStages]);
    }
    flash::cp_async_wait<0>();
    __syncthreads();  // every warp past its last mma and every copy landed: the results may reuse smem
  }
  // The results share the operands' shared memory: every warp is past its last mma (the barrier above).
  for (int b = 0; b < kNB; ++b)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j)
        wmma::store_matrix_sync(&res.c[b][wm * 32 + i * 16][wn * 32 + j * 16], acc[b][i][j], kLdc,
                                wmma::mem_row_major);
  __syncthreads();
  for (int it = tid; it < kBM * kBN; it += kThreads) {
    const int r = it / kBN, c = it % kBN, pos = row0 + r, col = c0 + c;
    if (pos >= row_end || col >= g.n_out) continue;
    if constexpr (kGated) {
      const float gate = res.c[0][r][c], up = res.c[1][r][c];
      g.out[int64_t(pos) * g.out_stride + col] = from_float<T>(gate / (1.f + expf(-gate)) * up);
    } else {
      g.out[int64_t(sorted[pos]) * g.out_stride + col] = from_float<T>(res.c[0][r][c]);
    }
  }
}

template <typename T>
void launch_typed(const Tensor& out, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                  const Tensor& topk_ids, const Tensor& topk_weights, const MoeScratch& s, int stages,
                  cudaStream_t stream) {
  const int64_t n = x.size(0);
  const int n_experts = int(w_gate_up.size(0)), inter = int(w_gate_up.size(1) / 2), hidden = int(w_gate_up.size(2));
  const int k = int(topk_ids.size(1)), n_slots = int(n * k);
  int32_t* index = s.index.ptr<int32_t>();
  if (stages & kGroupedAlign)
    moe_align::launch_moe_align<kBM>(index, topk_ids.ptr<int32_t>(), n_slots, n_experts, stream);
  const unsigned max_tiles = div_up(n_slots, kBM) + unsigned(n_experts);
  const GroupedGemm<T> gate_up{s.act.ptr<T>(), s.act.stride[0], x.ptr<T>(), x.stride[0], w_gate_up.ptr<T>(),
                               index, n_experts, k, inter, hidden};
  static const bool pipelined = env_choice("SEAM_MOE_GROUPED_PIPELINE", 1, {0, 1}) == 1;
  if (stages & kGroupedGateUp) {
    launch_kernel(pipelined ? moe_grouped_gemm_kernel<T, true, kStages> : moe_grouped_gemm_kernel<T, true, 1>,
                  dim3(max_tiles, div_up(inter, kBN)), dim3(kThreads), 0, stream, gate_up);
    SEAM_CUDA_CHECK_LAUNCH();
  }
  const GroupedGemm<T> down{s.expert_out.ptr<T>(), hidden, s.act.ptr<T>(), s.act.stride[0], w_down.ptr<T>(),
                            index, n_experts, k, hidden, inter};
  if (stages & kGroupedDown) {
    launch_kernel(pipelined ? moe_grouped_gemm_kernel<T, false, kStages> : moe_grouped_gemm_kernel<T, false, 1>,
                  dim3(max_tiles, div_up(hidden, kBN)), dim3(kThreads), 0, stream, down);
    SEAM_CUDA_CHECK_LAUNCH();
  }
  if (stages & kGroupedCombine) launch_moe_combine(out, s.expert_out, topk_weights, stream);
}

}  // namespace

bool moe_grouped_applies(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down, const MoeScratch& s) {
  if (x.dtype != DType::f16 && x.dtype != DType::bf16) return false;
  if (!s.expert_out.defined() || !s.index.defined()) return false;
  const int64_t n_experts = w_gate_up.size(0), inter = w_gate_up.size(1) / 2, hidden = w_gate_up.size(2);
  return n_experts <= kMaxGroupedExperts && hidden % 8 == 0 && inter % 8 == 0 && rows_vectorizable(x, hidden) &&
         rows_vectorizable(s.act, inter) && aligned16(w_gate_up.data) && aligned16(w_down.data) &&
         aligned16(s.expert_out.data) &&
         inter <= int64_t(65535) * kBN && hidden <= int64_t(65535) * kBN;
}

const char* grouped_kernel_name(GroupedKernel kernel) {
  switch (kernel) {
    case GroupedKernel::wmma: return "wmma";
    case GroupedKernel::wgmma: return "wgmma";
    case GroupedKernel::wgmma_n128: return "wgmma_n128";
    case GroupedKernel::wgmma_persistent: return "wgmma_persistent";
    case GroupedKernel::wgmma_tma: return "wgmma_tma";
  }
  return "?";
}

bool grouped_kernel_applies(GroupedKernel kernel, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                            const MoeScratch& s) {
  if (!moe_grouped_applies(x, w_gate_up, w_down, s)) return false;
  if (kernel == GroupedKernel::wgmma_tma) return moe_grouped_wgmma_tma_applies(x, w_gate_up, w_down, s);
  return kernel == GroupedKernel::wmma || moe_grouped_wgmma_applies(x, w_gate_up, w_down, s);
}

GroupedKernel choose_grouped_kernel(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                                    const MoeScratch& s) {
  static const int mode = env_choice("SEAM_MOE_GROUPED_WGMMA", 4, {0, 1, 2, 3, 4});
  const GroupedKernel wanted = mode == 0   ? GroupedKernel::wmma
                               : mode == 1 ? GroupedKernel::wgmma
                               : mode == 2 ? GroupedKernel::wgmma_n128
                               : mode == 3 ? GroupedKernel::wgmma_persistent
                                           : GroupedKernel::wgmma_tma;
  if (grouped_kernel_applies(wanted, x, w_gate_up, w_down, s)) return wanted;
  // The TMA form where its maps cannot be made: the one-tile wgmma kernel, then wmma.
  return grouped_kernel_applies(GroupedKernel::wgmma, x, w_gate_up, w_down, s) ? GroupedKernel::wgmma
                                                                               : GroupedKernel::wmma;
}

void launch_moe_experts_grouped_with(GroupedKernel kernel, const Tensor& out, const Tensor& x,
                                     const Tensor& w_gate_up, const Tensor& w_down, const Tensor& topk_ids,
                                     const Tensor& topk_weights, const MoeScratch& scratch, cudaStream_t stream,
                                     int stages) {
  SEAM_CHECK(grouped_kernel_applies(kernel, x, w_gate_up, w_down, scratch), "moe_experts: the grouped ",
             grouped_kernel_name(kernel), " kernels do not apply to these arguments");
  if (kernel == GroupedKernel::wgmma_persistent || kernel == GroupedKernel::wgmma_tma)
    return launch_moe_grouped_wgmma_persistent(out, x, w_gate_up, w_down, topk_ids, topk_weights, scratch, stages,
                                               stream, kernel == GroupedKernel::wgmma_tma);
  if (kernel != GroupedKernel::wmma)
    return launch_moe_grouped_wgmma(kernel == GroupedKernel::wgmma ? 256 : 128, out, x, w_gate_up, w_down, topk_ids,
                                    topk_weights, scratch, stages, stream);
  if (x.dtype == DType::bf16)
    launch_typed<__nv_bfloat16>(out, x, w_gate_up, w_down, topk_ids, topk_weights, scratch, stages, stream);
  else
    launch_typed<__half>(out, x, w_gate_up, w_down, topk_ids, topk_weights, scratch, stages, stream);
}

void launch_moe_experts_grouped(const Tensor& out, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                                const Tensor& topk_ids, const Tensor& topk_weights, const MoeScratch& scratch,
                                cudaStream_t stream) {
  SEAM_ASSERT(moe_grouped_applies(x, w_gate_up, w_down, scratch));
  launch_moe_experts_grouped_with(choose_grouped_kernel(x, w_gate_up, w_down, scratch), out, x, w_gate_up, w_down,
                                  topk_ids, topk_weights, scratch, stream);
}

bool moe_align_staged_fits(int64_t n_slots, int n_experts) { return moe_align::align_staged_fits(n_slots, n_experts); }

void launch_moe_align_index(const Tensor& index, const Tensor& topk_ids, int n_experts, int tile_rows, bool staged,
                            cudaStream_t stream) {
  SEAM_CHECK(tile_rows == 64 || tile_rows == 128, "moe align: tile_rows must be 64 or 128, got ", tile_rows);
  SEAM_CHECK(topk_ids.dtype == DType::i32 && topk_ids.ndim == 2 && topk_ids.contiguous() && index.dtype == DType::i32 &&
                 index.contiguous() && index.numel() >= 2 * int64_t(n_experts) + 2 + topk_ids.numel() &&
                 topk_ids.numel() <= INT32_MAX,
             "moe align: ids ", topk_ids.shape_str(), " index ", index.shape_str(), " for ", n_experts, " experts");
  const int n_slots = int(topk_ids.numel());
  if (tile_rows == 64)
    moe_align::launch_moe_align<64>(index.ptr<int32_t>(), topk_ids.ptr<int32_t>(), n_slots, n_experts, stream, staged);
  else
    moe_align::launch_moe_align<128>(index.ptr<int32_t>(), topk_ids.ptr<int32_t>(), n_slots, n_experts, stream,
                                     staged);
}

}  // namespace seam::cuda
