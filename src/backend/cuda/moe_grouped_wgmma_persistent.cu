// The grouped MoE GEMMs on Hopper wgmma, persistent and warp-specialised (sm_90a): the tiles,
// operand layout and numerics of moe_grouped_wgmma.cu's 128 x 256 kernel (read its header
// first), organised so that a tile's pipeline fill and epilogue overlap other work.
//
// Why: down's reduction (inter 768) is only 12 k-steps of 64; in the one-tile-a-block kernel every
// block fills its 4-stage pipeline before the first wgmma and stores its accumulators after the
// last, with the tensor cores idle both times, and at 512 tokens most tiles hold a few rows.
//
// Structure (CUTLASS's "cooperative persistent warp-specialised" kernel, cp.async instead of TMA:
// the A rows are gathered tokens):
//  * grid = min(SMs, the most tiles any routing can need), one block an SM (193 KB of shared
//    memory). Block b takes tiles b, b + grid, b + 2 grid, ... of the step's tile list
//    (tile = n_tile * n_m + m_tile, n_m = the align's 128-row M-tile count, read on the device:
//    the tiles past the real work are never reached, as the fixed grid's early exit). M-tiles
//    vary fastest, so the blocks running at once share an expert's B tile in L2, as the grid of
//    the one-tile kernel.
//  * warpgroup 0, the producer, issues every cp.async of a
//    ring of kStages stage buffers ([128 A rows][64] + [256 B rows][64], SW128, exactly the
//    one-tile kernel's), one stage a k-step, and walks straight from one tile's last k-step into
//    the next tile's first: it fills the next tile's stages while the consumers run the epilogue.
//    It also finds each tile's expert and rows (moe_align::find_tile) and hands the rows to the
//    consumers with the tile's first stage (tile_info), so they never wait on that search.
//  * warpgroups 1 and 2, the consumers, 64 rows each of the
//    same tile: wait for a stage, 4 wgmma m64n256k16 on it (one group left in flight, as the
//    one-tile kernel), release the stage the previous group read, and after the tile's last
//    k-step the same epilogue as the one-tile kernel, straight from the accumulators.
//  * Two mbarriers a stage. full[s] (kProducerThreads arrivals): every producer thread, once its
//    own copies of the stage have landed (cp.async.wait_group), fences them to the async proxy
//    (fence.proxy.async) and arrives: the one-tile kernel's wait_group + fence + __syncthreads
//    handshake with the block barrier replaced by the mbarrier's release/acquire. To keep copies
//    in flight a producer thread publishes stage j only after issuing j + kPublishLag (its
//    wait_group<kPublishLag> then waits for j's copies alone). empty[s] (kConsumerWarps
//    arrivals): lane 0 of every consumer warp, after the wgmma that read the stage retired.
//  * Phases: global k-step j (counted over the block's tiles) uses stage j % kStages in round
//    j / kStages. full[s] completes its phase r when round r's copies are published; empty[s]
//    its phase r when round r's stage is released. The consumers wait on full's phase
//    j / kStages; the producer, before refilling, on empty's phase j / kStages - 1 (nothing in
//    round 0). No barrier can run two phases ahead of a waiter: filling round r + 1 needs round
//    r released, which needs every consumer past its wait on round r.
//  * No deadlock: the producer, about to fill step j, waits for the release of j - kStages,
//    which (kInflight = 1) comes once the consumers have issued step j - kStages + 1 (or at
//    once, when j - kStages ended a tile); the producer has published every step up to
//    j - 1 - kPublishLag, so kPublishLag <= kStages - 2 is enough.
//  * Registers: 168 a thread (__launch_bounds__(384, 1)), which the consumers' 128 accumulators
//    and the epilogue fit without spills (ptxas -v, CUDA 13.0). No setmaxnreg: moving registers
//    to the consumers (producer 56 / consumers 224, or 40 / 232) made ptxas spill the producer's
//    row pointers, and nothing here needs more than 168.
//
// The TMA form (kTma, GroupedKernel::wgmma_tma): the weight tile of a stage is one or two TMA
// boxes (tma.cuh: SW128, exactly the layout the cp.async copies build) issued by producer thread 0
// with arrive_expect_tx on the stage's full barrier, and down's A tile too (act is already in
// sorted order: rows row0.. of a tile are contiguous, one 128-row box). gate_up's A rows are
// gathered tokens and stay on the producer warpgroup's cp.async (8 a thread a step instead of 24).
// Why: the cp.async form spends 3,072 16-byte copies a k-step in 128 producer threads, and the
// whole tile through the LSU; TMA moves the same 48 KB in two or three instructions.
// Boxes may cover rows past the tile (the next expert's weight rows, rows of act past row_end, or
// past the matrix: zero-filled): they land in accumulator rows / columns the epilogue never
// stores, and each output depends on its own row and column alone, so the stored results are the
// cp.async form's bits. Full barriers count kProducerThreads + 1 arrivals (gate_up) or 1 (down).
//
// Numerics are the one-tile kernel's: per tile the same f32 accumulators zeroed, the same
// wgmma sequence over the same k order, the same epilogue arithmetic and rounding.
#include <algorithm>
#include <climits>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/flash_mma.cuh"
#include "backend/cuda/mbarrier.cuh"
#include "backend/cuda/moe_align.cuh"
#include "backend/cuda/moe_combine.h"
#include "backend/cuda/moe_grouped_wgmma.h"
#include "backend/cuda/moe_grouped_wgmma_persistent.h"
#include "backend/cuda/tma.cuh"
#include "backend/cuda/wgmma.cuh"

namespace seam::cuda {

namespace {

struct PersistentTiling {
  static constexpr int kWgRows = 64;            // rows of one consumer warpgroup (wgmma M)
  static constexpr int kBM = 2 * kWgRows;       // rows (slots) of a tile
  static constexpr int kBRows = 256;            // rows of the B tile (wgmma N)
  static constexpr int kBK = 64;                // k of a step: one 128-byte SW128 line
  static constexpr int kProducerThreads = 128;  // warpgroup 0
  static constexpr int kConsumerThreads = 256;  // warpgroups 1 and 2
  static constexpr int kConsumerWarps = kConsumerThreads / 32;
  static constexpr int kThreads = kProducerThreads + kConsumerThreads;
  static constexpr int kLine = 128;  // bytes of a swizzled line
  static constexpr int kATileBytes = kBM * kLine;
  static constexpr int kBTileBytes = kBRows * kLine;
  static constexpr int kStageBytes = kATileBytes + kBTileBytes;
  static constexpr int kStages = 4;
  static constexpr int kPublishLag = 2;  // steps a producer thread issues before publishing one
  static constexpr int kInflight = 1;    // wgmma groups a consumer leaves running across a step
  static constexpr int kBarrierBytes = 2 * kStages * 8;
  static constexpr int kTileInfoBytes = kStages * 8;  // (row0, row_end) of the tile a stage starts
  static constexpr size_t kSmemBytes =
      size_t(kStages) * kStageBytes + kBarrierBytes + kTileInfoBytes + 1024;  // +1024: alignment
  static constexpr int kChunks = kBK / 8;                                     // 16-byte chunks of a line
  static constexpr int kRowsPerPass = kProducerThreads / kChunks;             // rows one pass of the producer copies
  static constexpr int kALoads = kBM / kRowsPerPass;                          // a producer thread's rows of the A tile
  static constexpr int kBLoads = kBRows / kRowsPerPass;                       // ... of the B tile
  static_assert(kPublishLag <= kStages - 2, "the producer must publish a step before it waits for its buffer");
  static_assert(kInflight == 1, "the consumers release step j - 1 after issuing step j");
  static_assert(kRowsPerPass % 8 == 0, "a producer thread's rows keep their swizzle phase (row % 8)");
  static_assert(kALoads <= 32 && kBLoads <= 32, "row masks are 32-bit");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory of a block");
};

template <typename T>
struct PersistentGemm {
  T* out;  // act [n * k, inter] (gated) or expert_out [n * k, hidden]
  int64_t out_stride;
  const T* a;  // x [n, hidden] (gated) or act [n * k, inter]
  int64_t a_stride;
  const T* w;            // w_gate_up [n_experts, 2 * inter, hidden] or w_down [n_experts, hidden, inter]
  const int32_t* index;  // moe_align_kernel<128>'s
  int n_experts, k;
  int n_out;  // columns of C: inter (gated) or hidden
  int n_k;    // the reduction: hidden (gated) or inter
};

// map_a / map_b: the TMA form's boxes (unused by the cp.async form): map_a act (down only) in
// boxes of kBM rows, map_b the weights viewed as [n_experts * rows an expert, n_k] in boxes of
// kBRows (down) or kBRows / 2 (gate_up: the gate box and the up box) rows; both 128 bytes of k wide.
template <typename T, bool kGated, bool kTma>
__global__ void __launch_bounds__(PersistentTiling::kThreads, 1)
    moe_grouped_wgmma_persistent_kernel(const __grid_constant__ CUtensorMap map_a,
                                        const __grid_constant__ CUtensorMap map_b, PersistentGemm<T> g) {
#if defined(SEAM_WGMMA_ENABLED)
  using Tl = PersistentTiling;
  constexpr int kOutCols = kGated ? Tl::kBRows / 2 : Tl::kBRows;  // output columns of a tile
  pdl_begin();
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024u - (flash::smem_addr(smem_raw) & 1023u)) & 1023u);
  const uint32_t smem_base = flash::smem_addr(smem);                    // 1024-aligned: descriptors' base offset 0
  const uint32_t full_bar = smem_base + Tl::kStages * Tl::kStageBytes;  // kStages barriers, 8 bytes each
  const uint32_t empty_bar = full_bar + Tl::kStages * 8;
  // The producer's find_tile result for the consumers, written with the tile's first stage and
  // published by its full barrier (the consumers read it before they release that stage).
  int2* tile_info = reinterpret_cast<int2*>(smem + Tl::kStages * Tl::kStageBytes + Tl::kBarrierBytes);
  const int tid = threadIdx.x;
  // Full-barrier arrivals: every producer thread's publication, plus thread 0's arrive_expect_tx
  // for the TMA boxes; the TMA form's down has thread 0's alone.
  constexpr int kFullArrivals = !kTma ? Tl::kProducerThreads : kGated ? Tl::kProducerThreads + 1 : 1;
  if (tid == 0) {
    for (int s = 0; s < Tl::kStages; ++s) {
      mbarrier::init(full_bar + 8 * s, kFullArrivals);
      mbarrier::init(empty_bar + 8 * s, Tl::kConsumerWarps);
    }
  }
  __syncthreads();  // the last block-wide barrier: the roles below never meet again

  const int32_t* sorted = g.index + 2 * g.n_experts + 2;
  const int n_m = g.index[2 * g.n_experts + 1];  // tile_start[n_experts]: the step's 128-row M-tiles
  const int n_tiles = n_m * ((g.n_out + kOutCols - 1) / kOutCols);
  const int n_steps = (g.n_k + Tl::kBK - 1) / Tl::kBK;

  if (kTma && !kGated && tid < Tl::kProducerThreads) {
    // ---- producer, TMA form of down: thread 0 alone, act's box and the weight box a stage ----
    if (tid == 0) {
      tma::prefetch(&map_a);
      tma::prefetch(&map_b);
      int j = 0;
      for (int tile = blockIdx.x; tile < n_tiles; tile += gridDim.x) {
        const int c0 = (tile / n_m) * kOutCols;
        int e, row0, row_end;
        moe_align::find_tile<Tl::kBM>(g.index, g.n_experts, tile % n_m, e, row0, row_end);  // found
        for (int step = 0; step < n_steps; ++step, ++j) {
          const int s = j % Tl::kStages, round = j / Tl::kStages;
          if (round > 0) mbarrier::wait(empty_bar + 8 * s, (round - 1) & 1);
          if (step == 0) tile_info[s] = make_int2(row0, row_end);  // released by the arrive below
          const uint32_t st = smem_base + s * Tl::kStageBytes, bar = full_bar + 8 * s;
          mbarrier::arrive_expect_tx(bar, Tl::kStageBytes);
          tma::load_2d(st, &map_a, bar, step * Tl::kLine, row0);
          tma::load_2d(st + Tl::kATileBytes, &map_b, bar, step * Tl::kLine, e * g.n_out + c0);
        }
      }
    }
  } else if (tid < Tl::kProducerThreads) {
    // ---- producer: every copy of every stage (the TMA form: the A rows; thread 0 the B boxes) ----
    // Thread tid copies chunk tid % 8 of rows tid / 8 + 16 i of the A and the B tile; rows outside
    // the tile read a row inside the operand with src-size 0 (zero-filled).
    const int chunk = tid % Tl::kChunks, r_first = tid / Tl::kChunks;
    // SW128: chunk c of line r at chunk c ^ (r % 8); r % 8 is the same for all of a thread's rows.
    const int dst0 = r_first * Tl::kLine + ((chunk ^ (r_first & 7)) << 4);
    if (kTma && tid == 0) tma::prefetch(&map_b);
    int j = 0;  // global k-step of this block
    for (int tile = blockIdx.x; tile < n_tiles; tile += gridDim.x) {
      const int m_tile = tile % n_m, c0 = (tile / n_m) * kOutCols;
      int e, row0, row_end;
      moe_align::find_tile<Tl::kBM>(g.index, g.n_experts, m_tile, e, row0, row_end);  // m_tile < n_m: found
      const T* a_row[Tl::kALoads];
      uint32_t a_ok = 0, b_ok = 0;
#pragma unroll
      for (int i = 0; i < Tl::kALoads; ++i) {
        const int pos = row0 + r_first + i * Tl::kRowsPerPass;
        const bool ok = pos < row_end;
        a_ok |= uint32_t(ok) << i;
        const int64_t a_r = !ok ? 0 : kGated ? sorted[pos] / g.k : pos;
        a_row[i] = g.a + a_r * g.a_stride;
      }
      // B row r of the tile: down, column c0 + r of w_down[e]; gate_up, rows [0, 128) gate rows
      // c0 + r and [128, 256) up rows inter + c0 + r - 128 of w_gate_up[e].
      const T* w_e = g.w + int64_t(e) * (kGated ? 2 : 1) * g.n_out * g.n_k;
      auto b_offset = [&](int i) -> int64_t {  // element offset of row i's start in w_e (valid rows)
        const int r = r_first + i * Tl::kRowsPerPass;
        if constexpr (kGated)
          return (int64_t(r / kOutCols) * g.n_out + c0 + r % kOutCols) * g.n_k;
        else
          return int64_t(c0 + r) * g.n_k;
      };
#pragma unroll
      for (int i = 0; i < Tl::kBLoads; ++i) {
        const int r = r_first + i * Tl::kRowsPerPass;
        b_ok |= uint32_t(c0 + (kGated ? r % kOutCols : r) < g.n_out) << i;
      }
      for (int step = 0; step < n_steps; ++step, ++j) {
        const int s = j % Tl::kStages, round = j / Tl::kStages;
        if (round > 0) mbarrier::wait(empty_bar + 8 * s, (round - 1) & 1);   // round - 1's wgmmas retired
        if (step == 0 && tid == 0) tile_info[s] = make_int2(row0, row_end);  // thread 0 arrives for it below
        unsigned char* st = smem + s * Tl::kStageBytes;
        if constexpr (kTma) {
          // The gate box (rows c0.. of the expert's gate half) over the up box (inter + c0..).
          if (tid == 0) {
            const uint32_t b = smem_base + s * Tl::kStageBytes + Tl::kATileBytes, bar = full_bar + 8 * s;
            const int w_row = e * 2 * g.n_out + c0;
            mbarrier::arrive_expect_tx(bar, Tl::kBTileBytes);
            tma::load_2d(b, &map_b, bar, step * Tl::kLine, w_row);
            tma::load_2d(b + (Tl::kBRows / 2) * Tl::kLine, &map_b, bar, step * Tl::kLine, w_row + g.n_out);
          }
        }
        const int col = step * Tl::kBK + chunk * 8;
        const bool in_k = col < g.n_k;  // n_k % 8 == 0: a chunk is wholly inside or outside
#pragma unroll
        for (int i = 0; i < Tl::kALoads; ++i) {
          const bool v = (a_ok >> i & 1u) && in_k;
          flash::cp_async_16(st + dst0 + i * Tl::kRowsPerPass * Tl::kLine, v ? a_row[i] + col : a_row[i], v);
        }
        if constexpr (!kTma) {
#pragma unroll
          for (int i = 0; i < Tl::kBLoads; ++i) {
            const bool v = (b_ok >> i & 1u) && in_k;
            unsigned char* dst = st + Tl::kATileBytes + dst0 + i * Tl::kRowsPerPass * Tl::kLine;
            flash::cp_async_16(dst, v ? w_e + b_offset(i) + col : w_e, v);
          }
        }
        flash::cp_async_commit();  // one group a step
        if (j >= Tl::kPublishLag) {
          flash::cp_async_wait<Tl::kPublishLag>();  // this thread's copies of step j - kPublishLag landed
          wgmma::fence_proxy_async();               // ... and are visible to wgmma (async proxy)
          mbarrier::arrive(full_bar + 8 * ((j - Tl::kPublishLag) % Tl::kStages));
        }
      }
    }
    // The last (up to) kPublishLag steps; nothing is left in flight at exit.
    flash::cp_async_wait<0>();
    wgmma::fence_proxy_async();
    for (int p = j - Tl::kPublishLag < 0 ? 0 : j - Tl::kPublishLag; p < j; ++p)
      mbarrier::arrive(full_bar + 8 * (p % Tl::kStages));
  } else {
    // ---- consumers: the wgmmas and the epilogue ----
    const int ctid = tid - Tl::kProducerThreads, lane = tid & 31;
    const int wg = ctid / 128, wg_warp = (ctid >> 5) & 3;              // consumer warpgroup (0, 1) and its warp
    const uint32_t a_base = smem_base + wg * Tl::kWgRows * Tl::kLine;  // this warpgroup's 64 A rows
    // Lane 0 of each warp releases a stage once the warp's wgmmas reading it retired.
    auto release = [&](int step_j) {
      __syncwarp();
      if (lane == 0) mbarrier::arrive(empty_bar + 8 * (step_j % Tl::kStages));
    };
    float acc[Tl::kBRows / 8][4];
    int j = 0;
    for (int tile = blockIdx.x; tile < n_tiles; tile += gridDim.x) {
      const int c0 = (tile / n_m) * kOutCols;
      int row0 = 0, row_end = 0;  // the tile's sorted rows, from the producer's tile_info (step 0)
      // A warpgroup whose 64 rows are all past the group's end skips its wgmmas (warpgroup-
      // uniform), but waits for and releases every stage as the other.
      bool wg_has_rows = false;
#pragma unroll
      for (int n = 0; n < Tl::kBRows / 8; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;
      for (int step = 0; step < n_steps; ++step, ++j) {
        const int s = j % Tl::kStages;
        mbarrier::wait(full_bar + 8 * s, (j / Tl::kStages) & 1);
        wgmma::fence_proxy_async();  // the producers fenced their copies; harmless on this side
        if (step == 0) {
          const int2 info = tile_info[s];
          row0 = info.x, row_end = info.y;
          wg_has_rows = row0 + wg * Tl::kWgRows < row_end;
        }
        const uint32_t st = s * Tl::kStageBytes;
        // K-major SW128 operands (LBO unused, SBO = 1024: the next 8 rows); a k16 step is 32 bytes.
        const uint64_t a_desc = wgmma::desc_sw128(a_base + st, 16, 1024);
        const uint64_t b_desc = wgmma::desc_sw128(smem_base + st + Tl::kATileBytes, 16, 1024);
        if (wg_has_rows) {
          wgmma::fence_operands(acc);
          wgmma::fence();
#pragma unroll
          for (int ks = 0; ks < Tl::kBK / 16; ++ks)
            wgmma::m64n256k16_ss<T>(acc, wgmma::desc_advance(a_desc, ks * 32), wgmma::desc_advance(b_desc, ks * 32),
                                    true);
          wgmma::commit();
          wgmma::wait<Tl::kInflight>();  // step - 1's group retired: its stage can be refilled
          wgmma::fence_operands(acc);
        }
        if (step > 0) release(j - 1);
      }
      wgmma::wait<0>();
      wgmma::fence_operands(acc);
      release(j - 1);  // the tile's last stage: the producer may already be on the next tile

      // Epilogue (the one-tile kernel's): thread (warp w, lane) holds rows 16 w + lane / 4 (+ 8)
      // of its warpgroup's 64, columns 8 n + 2 (lane % 4) (+ 1) of the 256 (wgmma.cuh).
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
            for (int q = 0; q < 2; ++q) {
              const float gate = acc[n][2 * h + q], up = acc[n + kOutCols / 8][2 * h + q];
              v[q] = gate / (1.f + expf(-gate)) * up;  // as the wmma kernel (and a dense MLP's act)
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
    }
  }
#else
  // Built without sm_90a: moe_grouped_wgmma_applies is false, the kernel never launched.
  (void)g;
  __trap();
#endif
}

int sm_count() {
  int dev = 0, n = 0;
  SEAM_CUDA_CHECK(cudaGetDevice(&dev));
  SEAM_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
  return n;
}

template <typename T, bool kTma>
void launch_typed(const Tensor& out, const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                  const Tensor& topk_ids, const Tensor& topk_weights, const MoeScratch& s, int stages,
                  cudaStream_t stream) {
  using Tl = PersistentTiling;
  once_per_device(reinterpret_cast<const void*>(moe_grouped_wgmma_persistent_kernel<T, true, kTma>), [] {
    SEAM_CUDA_CHECK(cudaFuncSetAttribute(moe_grouped_wgmma_persistent_kernel<T, true, kTma>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, int(Tl::kSmemBytes)));
    SEAM_CUDA_CHECK(cudaFuncSetAttribute(moe_grouped_wgmma_persistent_kernel<T, false, kTma>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, int(Tl::kSmemBytes)));
  });
  const int64_t n = x.size(0);
  const int n_experts = int(w_gate_up.size(0)), inter = int(w_gate_up.size(1) / 2), hidden = int(w_gate_up.size(2));
  const int k = int(topk_ids.size(1)), n_slots = int(n * k);
  int32_t* index = s.index.ptr<int32_t>();
  if (stages & kGroupedAlign)
    moe_align::launch_moe_align<Tl::kBM>(index, topk_ids.ptr<int32_t>(), n_slots, n_experts, stream);
  // The most M-tiles any routing can need, times the column tiles: more blocks than that would
  // find no tile at all.
  const int64_t max_m_tiles = div_up(n_slots, Tl::kBM) + int64_t(n_experts);
  const int n_sms = sm_count();
  auto grid_for = [&](int64_t col_tiles) { return dim3(unsigned(std::min<int64_t>(n_sms, max_m_tiles * col_tiles))); };
  // The TMA form's maps, encoded per launch (about a microsecond of host time; a captured launch
  // keeps its own copy): 16-bit elements as bytes, rows of n_k * 2 bytes.
  const CUtensorMap none{};
  if (stages & kGroupedGateUp) {
    const PersistentGemm<T> gate_up{s.act.ptr<T>(), s.act.stride[0], x.ptr<T>(), x.stride[0], w_gate_up.ptr<T>(),
                                    index,          n_experts,       k,          inter,       hidden};
    const CUtensorMap map_b =
        kTma ? tma::encode_u8_sw128(w_gate_up.data, uint64_t(n_experts) * 2 * inter, uint64_t(hidden) * 2,
                                    uint64_t(hidden) * 2, Tl::kBRows / 2)
             : none;
    launch_kernel(moe_grouped_wgmma_persistent_kernel<T, true, kTma>, grid_for(div_up(inter, Tl::kBRows / 2)),
                  dim3(Tl::kThreads), Tl::kSmemBytes, stream, none, map_b, gate_up);
    SEAM_CUDA_CHECK_LAUNCH();
  }
  if (stages & kGroupedDown) {
    const PersistentGemm<T> down{s.expert_out.ptr<T>(),
                                 hidden,
                                 s.act.ptr<T>(),
                                 s.act.stride[0],
                                 w_down.ptr<T>(),
                                 index,
                                 n_experts,
                                 k,
                                 hidden,
                                 inter};
    const CUtensorMap map_a = kTma ? tma::encode_u8_sw128(s.act.data, uint64_t(s.act.size(0)), uint64_t(inter) * 2,
                                                          uint64_t(s.act.stride[0]) * 2, Tl::kBM)
                                   : none;
    const CUtensorMap map_b = kTma ? tma::encode_u8_sw128(w_down.data, uint64_t(n_experts) * hidden,
                                                          uint64_t(inter) * 2, uint64_t(inter) * 2, Tl::kBRows)
                                   : none;
    launch_kernel(moe_grouped_wgmma_persistent_kernel<T, false, kTma>, grid_for(div_up(hidden, Tl::kBRows)),
                  dim3(Tl::kThreads), Tl::kSmemBytes, stream, map_a, map_b, down);
    SEAM_CUDA_CHECK_LAUNCH();
  }
  if (stages & kGroupedCombine) launch_moe_combine(out, s.expert_out, topk_weights, stream);
}

}  // namespace

bool moe_grouped_wgmma_tma_applies(const Tensor& x, const Tensor& w_gate_up, const Tensor& w_down,
                                   const MoeScratch& s) {
  // The maps' conditions past moe_grouped_wgmma_applies (16-byte aligned rows of 16-byte multiples
  // already): contiguous expert weights (the maps span all experts), act's pitch a 16-byte
  // multiple, row coordinates in int, and a driver with the encoder.
  if (!moe_grouped_wgmma_applies(x, w_gate_up, w_down, s)) return false;
  return w_gate_up.contiguous() && w_down.contiguous() && (s.act.stride[0] * 2) % 16 == 0 &&
         w_gate_up.size(0) * w_gate_up.size(1) <= INT_MAX && w_down.size(0) * w_down.size(1) <= INT_MAX &&
         s.act.size(0) <= INT_MAX && tma::encode_tiled_fn() != nullptr;
}

void launch_moe_grouped_wgmma_persistent(const Tensor& out, const Tensor& x, const Tensor& w_gate_up,
                                         const Tensor& w_down, const Tensor& topk_ids, const Tensor& topk_weights,
                                         const MoeScratch& scratch, int stages, cudaStream_t stream, bool tma) {
  SEAM_CHECK(moe_grouped_wgmma_applies(x, w_gate_up, w_down, scratch),
             "moe_experts: the grouped wgmma kernels need an sm_90a build, a CC 9.0 GPU and the grouped path's shapes");
  SEAM_CHECK(!tma || moe_grouped_wgmma_tma_applies(x, w_gate_up, w_down, scratch),
             "moe_experts: the grouped wgmma TMA kernels need contiguous expert weights and a driver with "
             "cuTensorMapEncodeTiled");
  const bool bf16 = x.dtype == DType::bf16;
  auto launch = bf16 ? (tma ? launch_typed<__nv_bfloat16, true> : launch_typed<__nv_bfloat16, false>)
                     : (tma ? launch_typed<__half, true> : launch_typed<__half, false>);
  launch(out, x, w_gate_up, w_down, topk_ids, topk_weights, scratch, stages, stream);
}

}  // namespace seam::cuda
