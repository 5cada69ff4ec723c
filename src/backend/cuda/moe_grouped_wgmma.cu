// The grouped MoE GEMMs on Hopper tensor cores (wgmma, sm_90a): the wmma kernels' contract
// (moe_experts_grouped.cu: same align, epilogues, scratch and combine), larger tiles.
//
// A block = 2 warpgroups (256 threads) x 64 rows = 128 sorted rows (slots) of one expert
// (moe_align.cuh's M-tile, counted in 128-row tiles here) times one B tile of kN rows (wgmma N:
// 256, or 128 in the narrow variant):
//   down:    kN output columns c0.. of w_down[e] ([hidden, inter] row-major = K-major B);
//   gate_up: kN/2 gate rows c0.. of w_gate_up[e] stacked on the kN/2 up rows inter + c0..: one
//            m64nkN accumulator holds gate in its first half of columns and up in the second,
//            and a thread owns gate (row, c) and up (row, c) alike (accumulator n and
//            n + kN/16 of the mma.sync fragment layout, wgmma.cuh), so silu(gate) * up needs no
//            exchange.
// The reduction runs in k-steps of 64 (one 128-byte swizzled line of 16-bit elements: the A
// tile of a step is [128 rows][64] SW128, the B tile [kN rows][64]), 4 wgmma m64nkNk16 a step,
// both operands K-major from shared memory exactly as attention_prefill_wgmma.cu's S = Q K^T
// (A = the gathered token rows, B = the weight rows). Operand tiles are gathered with cp.async
// 16 bytes a chunk (the A rows are scattered tokens: no TMA), chunks past n_k or past the tile's
// rows zero-filled, so any n_k % 8 == 0 works (the zero k-columns add nothing).
//
// Pipeline (not warp-specialised, as the attention kernel): kStages stage buffers, every thread
// commits one cp.async group a step (empty past the end, so the wait counts stay exact), the
// loads of a step issued kLoadAhead steps before it. At step s the wait_group, proxy fence and
// block barrier publish step s's tiles to the async proxy; each warpgroup issues its 4 wgmmas,
// then the loads of step s + kLoadAhead into the buffer step s - 1 - kInflight held (every
// warpgroup had waited for that step's wgmmas before the barrier), then waits until at most
// kInflight wgmma groups run.
//   kN = 256: 4 stages (192 KB), one wgmma group left in flight across the barrier (the tensor
//             cores never drain between steps), one block an SM (180 registers a thread);
//   kN = 128: 3 stages (97 KB), groups waited for each step, <= 128 registers: two blocks an SM,
//             one block's prologue and epilogue overlapping the other's main loop.
// The wide tile moves 85 FLOPs a byte from L2 against the narrow one's 64.
//
// The grid is the wmma path's: x over the most 128-row tiles any routing can need (n * k / 128
// + n_experts; blocks past the step's tile count exit before any barrier), y over output column
// tiles; consecutive blocks are consecutive M-tiles of an expert, so they share its weight tile
// in L2.
#include "backend/cuda/moe_grouped_wgmma.h"

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/flash_mma.cuh"
#include "backend/cuda/moe_align.cuh"
#include "backend/cuda/moe_combine.h"
#include "backend/cuda/sm90a_device.h"
#include "backend/cuda/wgmma.cuh"

namespace seam::cuda {

namespace {

// kN: rows of the B tile = wgmma N (128 or 256; see the pipeline above).
template <int kN>
struct WgmmaGroupedTiling {
  static constexpr int kWgRows = 64;                  // rows of one warpgroup (wgmma M)
  static constexpr int kBM = 2 * kWgRows;             // rows (slots) of a block
  static constexpr int kBRows = kN;                   // rows of the B tile (wgmma N)
  static constexpr int kBK = 64;                      // k of a step: one 128-byte SW128 line
  static constexpr int kThreads = 256;
  static constexpr int kLine = 128;                   // bytes of a swizzled line
  static constexpr int kATileBytes = kBM * kLine;     // A tile of one stage
  static constexpr int kBTileBytes = kBRows * kLine;  // B tile of one stage
  static constexpr int kStageBytes = kATileBytes + kBTileBytes;
  static constexpr int kStages = kN == 128 ? 3 : 4;
  static constexpr int kInflight = kN == 128 ? 0 : 1;  // wgmma groups left running across a step
  static constexpr int kMinBlocks = kN == 128 ? 2 : 1;  // blocks an SM (__launch_bounds__)
  static constexpr size_t kSmemBytes = size_t(kStages) * kStageBytes + 1024;  // +1024: atom alignment
  static constexpr int kChunks = kBK / 8;                      // 16-byte chunks of a line
  static constexpr int kRowsPerPass = kThreads / kChunks;      // rows one pass of all threads copies
  static constexpr int kALoads = kBM / kRowsPerPass;           // a thread's rows of the A tile
  static constexpr int kBLoads = kBRows / kRowsPerPass;        // ... of the B tile
  static_assert(kN == 128 || kN == 256, "wgmma N of the grouped kernels");
  static_assert(kRowsPerPass % 8 == 0, "a thread's rows keep their swizzle phase (row % 8)");
  static_assert(kSmemBytes * kMinBlocks <= 227 * 1024, "shared memory of the resident blocks");
};

template <typename T>
struct WgmmaGroupedGemm {
  T* out;            // act [n * k, inter] (gated) or expert_out [n * k, hidden]
  int64_t out_stride;
  const T* a;        // x [n, hidden] (gated) or act [n * k, inter]
  int64_t a_stride;
  const T* w;        // w_gate_up [n_experts, 2 * inter, hidden] or w_down [n_experts, hidden, inter]
  const int32_t* index;  // moe_align_kernel<kBM>'s
  int n_experts, k;
  int n_out;         // columns of C: inter (gated) or hidden
  int n_k;           // the reduction: hidden (gated) or inter
};

template <typename T, bool kGated, int kN>
__global__ void __launch_bounds__(WgmmaGroupedTiling<kN>::kThreads, WgmmaGroupedTiling<kN>::kMinBlocks)
    moe_grouped_wgmma_kernel(WgmmaGroupedGemm<T> g) {
#if defined(SEAM_WGMMA_ENABLED)
  using Tl = WgmmaGroupedTiling<kN>;
  constexpr int kOutCols = kGated ? Tl::kBRows / 2 : Tl::kBRows;  // output columns of a block
  pdl_begin();
  int e, row0, row_end;
  if (!moe_align::find_tile<Tl::kBM>(g.index, g.n_experts, blockIdx.x, e, row0, row_end)) return;  // block-uniform
  const int32_t* sorted = g.index + 2 * g.n_experts + 2;
  const int c0 = blockIdx.y * kOutCols;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024u - (flash::smem_addr(smem_raw) & 1023u)) & 1023u);
  const uint32_t smem_base = flash::smem_addr(smem);  // 1024-aligned: descriptors' base offset 0
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wg = warp >> 2, wg_warp = warp & 3;

  // Copies: thread tid moves chunk tid % 8 of rows tid / 8 + 32 i of the A and the B tile.
  // Row starts are fixed for the block; rows outside the tile read the operand's row 0 (inside
  // the allocation) with src-size 0, i.e. they are zero-filled.
  const int chunk = tid % Tl::kChunks, r_first = tid / Tl::kChunks;
  const T* a_row[Tl::kALoads];
  const T* b_row[Tl::kBLoads];
  bool a_ok[Tl::kALoads], b_ok[Tl::kBLoads];
#pragma unroll
  for (int i = 0; i < Tl::kALoads; ++i) {
    const int pos = row0 + r_first + i * Tl::kRowsPerPass;
    a_ok[i] = pos < row_end;
    const int64_t a_r = !a_ok[i] ? 0 : kGated ? sorted[pos] / g.k : pos;
    a_row[i] = g.a + a_r * g.a_stride;
  }
  const T* w_e = g.w + int64_t(e) * (kGated ? 2 : 1) * g.n_out * g.n_k;  // the expert's [kNB * n_out, n_k]
#pragma unroll
  for (int i = 0; i < Tl::kBLoads; ++i) {
    const int r = r_first + i * Tl::kRowsPerPass;
    int64_t w_r;
    if constexpr (kGated) {
      const int col = c0 + r % kOutCols, part = r / kOutCols;  // rows [0, kN/2): gate, [kN/2, kN): up
      b_ok[i] = col < g.n_out;
      w_r = int64_t(part) * g.n_out + (b_ok[i] ? col : 0);
    } else {
      const int col = c0 + r;
      b_ok[i] = col < g.n_out;
      w_r = b_ok[i] ? col : 0;
    }
    b_row[i] = w_e + w_r * g.n_k;
  }
  // SW128: chunk c of line r at chunk c ^ (r % 8); r % 8 is the same for all of a thread's rows.
  const int dst0 = r_first * Tl::kLine + ((chunk ^ (r_first & 7)) << 4);
  const int n_steps = (g.n_k + Tl::kBK - 1) / Tl::kBK;
  auto issue = [&](int step) {
    if (step < n_steps) {
      unsigned char* st = smem + (step % Tl::kStages) * Tl::kStageBytes;
      const int col = step * Tl::kBK + chunk * 8;
      const bool in_k = col < g.n_k;  // n_k % 8 == 0: a chunk is wholly inside or outside
#pragma unroll
      for (int i = 0; i < Tl::kALoads; ++i) {
        const bool v = a_ok[i] && in_k;
        flash::cp_async_16(st + dst0 + i * Tl::kRowsPerPass * Tl::kLine, v ? a_row[i] + col : a_row[i], v);
      }
#pragma unroll
      for (int i = 0; i < Tl::kBLoads; ++i) {
        const bool v = b_ok[i] && in_k;
        unsigned char* dst = st + Tl::kATileBytes + dst0 + i * Tl::kRowsPerPass * Tl::kLine;
        flash::cp_async_16(dst, v ? b_row[i] + col : b_row[i], v);
      }
    }
    flash::cp_async_commit();
  };

  float acc[Tl::kBRows / 8][4];
#pragma unroll
  for (int n = 0; n < Tl::kBRows / 8; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;
  // Step s's tiles go to buffer s % kStages, loaded kLoadAhead steps before they are used. The
  // buffer step s's loads refill held step s - 1 - kInflight, whose wgmmas every warpgroup
  // waited for (wait_group<kInflight> at step s - 1) before the barrier of step s.
  constexpr int kLoadAhead = Tl::kStages - 1 - Tl::kInflight;
#pragma unroll
  for (int s = 0; s < kLoadAhead; ++s) issue(s);
  const uint32_t a_base = smem_base + wg * Tl::kWgRows * Tl::kLine;  // this warpgroup's 64 A rows
  // A warpgroup whose 64 rows are all past the group's end (an expert's last tile holding at most
  // 64 rows: ~1 tile in 5 at 4,096 tokens of Qwen3-30B-A3B, every tile at 512) skips its wgmmas,
  // leaving the tensor cores to the other; it still copies and meets every barrier. The branch
  // is warpgroup-uniform, and ptxas keeps the wgmma pipeline (no C7508-C7520 serialisation).
  const bool wg_has_rows = row0 + wg * Tl::kWgRows < row_end;
  for (int step = 0; step < n_steps; ++step) {
    flash::cp_async_wait<kLoadAhead - 1>();  // groups 0..step have landed (one group a step)
    wgmma::fence_proxy_async();
    __syncthreads();  // step's tiles visible to the async proxy; the refilled buffer is free
    const uint32_t st = (step % Tl::kStages) * Tl::kStageBytes;
    // K-major SW128 operands (LBO unused, SBO = 1024: the next 8 rows); a k16 step is 32 bytes.
    const uint64_t a_desc = wgmma::desc_sw128(a_base + st, 16, 1024);
    const uint64_t b_desc = wgmma::desc_sw128(smem_base + st + Tl::kATileBytes, 16, 1024);
    // acc pinned around the batch (CUTLASS's warpgroup_fence_operand): the compiler may not move
    // its zero-fill past the fence or any use across the wgmmas. The empty asm emits nothing, so
    // it is harmless with a group still in flight.
    if (wg_has_rows) {
      wgmma::fence_operands(acc);
      wgmma::fence();
#pragma unroll
      for (int ks = 0; ks < Tl::kBK / 16; ++ks) {
        const uint64_t a = wgmma::desc_advance(a_desc, ks * 32), b = wgmma::desc_advance(b_desc, ks * 32);
        if constexpr (kN == 256)
          wgmma::m64n256k16_ss<T>(acc, a, b, true);
        else
          wgmma::m64n128k16_ss<T>(acc, a, b, true);
      }
      wgmma::commit();
    }
    issue(step + kLoadAhead);  // after the wgmmas: the tensor cores start first (another buffer)
    if (wg_has_rows) {
      wgmma::wait<Tl::kInflight>();  // step - kInflight's buffers are read: a later barrier frees them
      wgmma::fence_operands(acc);
    }
  }
  wgmma::wait<0>();
  wgmma::fence_operands(acc);
  flash::cp_async_wait<0>();  // only empty groups remain; nothing is in flight at exit

  // Epilogue straight from the accumulators: thread (warp w, lane) holds rows 16 w + lane / 4
  // (+ 8) of its warpgroup's 64, columns 8 n + 2 (lane % 4) (+ 1) of the kN (wgmma.cuh).
  const int t2 = (lane & 3) * 2;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int pos = row0 + wg * Tl::kWgRows + wg_warp * 16 + (lane >> 2) + 8 * h;
    if (pos >= row_end) continue;
    if constexpr (kGated) {
      T* dst = g.out + int64_t(pos) * g.out_stride;
#pragma unroll
      for (int n = 0; n < kOutCols / 8; ++n) {
        const int col = c0 + n * 8 + t2;  // n_out % 8 == 0: col and col + 1 both in or both out
        if (col >= g.n_out) continue;
        float v[2];
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const float gate = acc[n][2 * h + j], up = acc[n + kOutCols / 8][2 * h + j];
          v[j] = gate / (1.f + expf(-gate)) * up;  // as the wmma kernel (and a dense MLP's act)
        }
        *reinterpret_cast<uint32_t*>(dst + col) = flash::pack2<T>(v[0], v[1]);
      }
    } else {
      T* dst = g.out + int64_t(sorted[pos]) * g.out_stride;  // back to the slot, for the combine
#pragma unroll
      for (int n = 0; n < kOutCols / 8; ++n) {
        const int col = c0 + n * 8 + t2;
        if (col >= g.n_out) continue;
        *reinterpret_cast<uint32_t*>(dst + col) = flash::pack2<T>(acc[n][2 * h], acc[n][2 * h + 1]);
      }
    }
  }
#else
  // Built without sm_90a: moe_grouped_wgmma_applies is false, the kernel never launched.
  using Tl = WgmmaGroupedTiling<kN>;
  (void)g;
  (void)(Tl::kInflight + Tl::kALoads + Tl::kBLoads);  // referenced in every pass (no unused warnings)
  __trap();
#endif
}

template <typename T, int kN>
void launch_typed(const Tensor& out, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                  const Tensor& topk_ids, const Tensor& topk_weights, const MoeScratch& s, int stages,
                  cudaStream_t stream) {
  using Tl = WgmmaGroupedTiling<kN>;
  once_per_device(reinterpret_cast<const void*>(moe_grouped_wgmma_kernel<T, true, kN>), [] {
    SEAM_CUDA_CHECK(cudaFuncSetAttribute(moe_grouped_wgmma_kernel<T, true, kN>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, int(Tl::kSmemBytes)));
    SEAM_CUDA_CHECK(cudaFuncSetAttribute(moe_grouped_wgmma_kernel<T, false, kN>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, int(Tl::kSmemBytes)));
  });
  const int64_t n = x.size(0);
  const int n_experts = int(w_gate_up.size(0)), inter = int(w_gate_up.size(1) / 2), hidden = int(w_gate_up.size(2));
  const int k = int(topk_ids.size(1)), n_slots = int(n * k);
  int32_t* index = s.index.ptr<int32_t>();
  if (stages & kGroupedAlign)
    moe_align::launch_moe_align<Tl::kBM>(index, topk_ids.ptr<int32_t>(), n_slots, n_experts, stream);
  const unsigned max_tiles = div_up(n_slots, Tl::kBM) + unsigned(n_experts);
  if (stages & kGroupedGateUp) {
    const WgmmaGroupedGemm<T> gate_up{s.act.ptr<T>(), s.act.stride[0], x.ptr<T>(), x.stride[0], w_gate_up.ptr<T>(),
                                      index, n_experts, k, inter, hidden};
    launch_kernel(moe_grouped_wgmma_kernel<T, true, kN>, dim3(max_tiles, div_up(inter, kN / 2)), dim3(Tl::kThreads),
                  Tl::kSmemBytes, stream, gate_up);
    SEAM_CUDA_CHECK_LAUNCH();
  }
  if (stages & kGroupedDown) {
    const WgmmaGroupedGemm<T> down{s.expert_out.ptr<T>(), hidden, s.act.ptr<T>(), s.act.stride[0], w_down.ptr<T>(),
                                   index, n_experts, k, hidden, inter};
    launch_kernel(moe_grouped_wgmma_kernel<T, false, kN>, dim3(max_tiles, div_up(hidden, kN)), dim3(Tl::kThreads),
                  Tl::kSmemBytes, stream, down);
    SEAM_CUDA_CHECK_LAUNCH();
  }
  if (stages & kGroupedCombine) launch_moe_combine(out, s.expert_out, topk_weights, stream);
}

template <typename T>
void launch_tile(int tile_n, const Tensor& out, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                 const Tensor& topk_ids, const Tensor& topk_weights, const MoeScratch& s, int stages,
                 cudaStream_t stream) {
  if (tile_n == 256) return launch_typed<T, 256>(out, x, w_gate_up, w_down, topk_ids, topk_weights, s, stages, stream);
  launch_typed<T, 128>(out, x, w_gate_up, w_down, topk_ids, topk_weights, s, stages, stream);
}

}  // namespace

bool moe_grouped_wgmma_applies(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down, const MoeScratch& s) {
#if defined(SEAM_CUDA_SM90A)
  static const bool device_ok = current_device_is_sm90();  // sm_90a code runs on 9.0 only
  if (!device_ok || !moe_grouped_applies(x, w_gate_up, w_down, s)) return false;
  const int64_t inter = w_gate_up.size(1) / 2, hidden = w_gate_up.size(2);
  // moe_grouped_applies holds the rest (16-bit, hidden and inter % 8 == 0: whole 16-byte chunks
  // and the epilogue's column pairs; 16-byte aligned rows); the grid's y limit of the narrower tile:
  return div_up(inter, 64) <= 65535u && div_up(hidden, 128) <= 65535u;
#else
  (void)x;
  (void)w_gate_up;
  (void)w_down;
  (void)s;
  return false;
#endif
}

void launch_moe_grouped_wgmma(int tile_n, const Tensor& out, const Tensor& x, const Tensor& w_gate_up,
                              const Tensor& w_down, const Tensor& topk_ids, const Tensor& topk_weights,
                              const MoeScratch& scratch, int stages, cudaStream_t stream) {
  SEAM_CHECK(moe_grouped_wgmma_applies(x, w_gate_up, w_down, scratch),
             "moe_experts: the grouped wgmma kernels need an sm_90a build, a CC 9.0 GPU and the grouped path's shapes");
  SEAM_CHECK(tile_n == 128 || tile_n == 256, "moe_experts: grouped wgmma tile N ", tile_n, " is not 128 or 256");
  if (x.dtype == DType::bf16)
    return launch_tile<__nv_bfloat16>(tile_n, out, x, w_gate_up, w_down, topk_ids, topk_weights, scratch, stages,
                                      stream);
  launch_tile<__half>(tile_n, out, x, w_gate_up, w_down, topk_ids, topk_weights, scratch, stages, stream);
}

}  // namespace seam::cuda
