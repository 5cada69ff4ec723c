// The kernel of the FP8 GEMM on Hopper's tensor cores with the scales in its epilogue,
// warp-specialised (fp8_gemm_wgmma_ws.h): its tiling and body. Included by fp8_gemm_wgmma_ws.cu
// only, whose launchers pick the instantiation, encode the tensor maps and size the grid.
// Same operands, tile layout and arithmetic as fp8_gemm_wgmma.cu (read its
// header first); what changes is who copies and who waits.
//
// Why: the one-block kernel has every warp both copy (cp.async) and multiply, meets at a block
// barrier every 128-wide K block, and waits for each block's wgmmas before promoting them, so the
// tensor cores idle at every barrier and promotion (~0.63 PFLOP/s at 4,096 rows, cuBLASLt's
// unscaled GEMM ~1.05).
//
// Structure (DeepGEMM's FP8 GEMM on Hopper; moe_grouped_wgmma_persistent.cu's mbarrier ring):
//  * Tiles of 128 rows x 128 or 256 outputs (SUB_N = 1 or 2 wgmma column blocks of 128; the
//    SEAM_FP8_WS_TILE_N switch, default 256): the wider tile moves 25 % fewer bytes from L2 per
//    FLOP (48 KB a K block for 8.4 MFLOP against 32 KB for 4.2), which at ~1.2 PFLOP/s is ~7
//    TB/s instead of ~9.4 across the 132 SMs.
//  * Persistent: grid = min(tiles, SMs), 384 threads, one block an SM (~202 KB of shared memory:
//    6 stages of 32 KB, or 4 of 48 KB); block b computes the tiles b, b + grid, ... of out, the
//    row tile fastest, so the
//    blocks running together share a few weight tiles and stream x from L2 (as the one-block
//    kernel's grid). The producer walks from one tile's last K block into the next tile's first,
//    so the next tile's stages fill while the consumers run the epilogue.
//  * warpgroup 0, the producer (setmaxnreg 40; warps 1-3 leave at once): per K block kb, lane 0
//    expects the stage's bytes and issues two TMA copies (tma.cuh: x's [128 rows][128 k] and w's
//    [128 or 256 outputs][128 k], SW128, rows past n / N zero-filled), and the 32 lanes cp.async the
//    stage's scales (block128: xs(rows, kb) and ws(outputs, kb) into the stage; otherwise, with a
//    tile's K block 0 only, the epilogue's xs(rows) and ws(outputs) into slot i % 2 of the block's
//    i-th tile) and arrive on the stage's full barrier once their copies land
//    (cp.async.mbarrier.arrive.noinc).
//  * warpgroups 1 and 2, the consumers (setmaxnreg 232), 64 rows each: wait for K block kb's full
//    barrier; per column block of 128, issue its 4 wgmma m64n128k32 into a fresh partial, wait
//    for them, promote the partial into that column block's float32 sums (block128: scaled by
//    xs(i, kb) ws(o, kb) read from the stage); release the stage (lane 0 of each warp arrives on
//    its empty barrier), next block. A warpgroup's tensor-core idle time (its wait, promotion and
//    barrier wait) is the other warpgroup's wgmma time: the two share the SM's tensor cores and
//    drift apart. 128-wide tiles of per-tensor / per-channel weights also overlap inside the
//    warpgroup: K block kb + 1's wgmmas go into a second partial before kb's is waited for
//    (wgmma.wait_group 1), so the warpgroup's own wgmmas run through its promotions.
//  * Fast accumulation (FAST, the default for per-tensor / per-channel weights: fp8_gemm_wgmma_ws.h,
//    Fp8WsAccum): no partials; every K block's wgmmas (all column blocks) add into the float32
//    sums in the tensor cores, block kb + 1 issued before kb is waited for, and kb's stage released
//    once its group retired: what CUTLASS's FP8FastAccum schedules (vLLM's FP8 GEMMs) do.
//  * Barriers a stage: full[s] (33 arrivals + the stage's bytes: lane 0's expect_tx and the
//    32 lanes' cp.async arrivals), empty[s] (16 arrivals: each consumer warp of the cluster's two
//    CTAs, or twice each of the CTA's own, below). The block's j-th K
//    block (counted over its tiles) uses stage j % S in round j / S; consumers wait on full's
//    phase parity (j / S) & 1; the producer, before refilling a stage in round r > 0, on empty's
//    parity (r - 1) & 1. Neither barrier can run two phases ahead of its waiter: refilling round
//    r + 1 needs round r released, which needs both consumer warpgroups past their wait on round r.
//    Per-tensor / per-channel: epi[2] (8 arrivals): the consumer warps read slot i % 2 in tile i's
//    epilogue (phase i / 2); the producer waits for tile i - 2's before writing tile i's scales.
//  * Clusters of 2 (the default for 128 x 256 tiles; SEAM_FP8_WS_CLUSTER=1 runs CTAs alone): the
//    two CTAs of a cluster take two row tiles of one column tile; each one's producer loads half
//    of the stage's weight box (128 rows; GLU: gate or up) and multicasts it into both CTAs' stage
//    (TMA .multicast::cluster, complete_tx on each CTA's full barrier, which expects the whole
//    stage's bytes itself); each consumer warp releases a stage on both CTAs' empty barriers
//    (2 x 8 arrivals; alone, twice on its own), so neither producer refills a stage the other CTA
//    still reads. The producer ends with a tail (every stage's last round released) so that no
//    arrival or multicast targets a CTA that has exited; the set-up ends with a cluster barrier.
//  * No block-wide barrier after the set-up; no deadlock: the producer waits only for stages the
//    consumers release unconditionally after their (producer-fed) wait, and for epilogues of
//    tiles whose every stage it has already filled.
//
// Numerics: the one-block kernel's (the same fresh partial per K block, scale-d off for its first
// k32 step, the same promotion and epilogue arithmetic, written the same way), so the two should
// agree bit for bit; the tests hold this one to the same bounds (exact values: bit-exact).
//
// ptxas (CUDA 13.0) and wgmma groups in flight: around a C++ polling loop (mbarrier::wait) or a
// branch it serialises every wgmma (C7518 / C7514), so the consumers wait with
// mbarrier::wait_in_flight and the overlapped loop has a branch-free body with its tail peeled;
// ptxas -v reports neither warning nor a spill for any instantiation.
#pragma once
#include <cstdint>

#include "backend/cuda/activation.cuh"
#include "backend/cuda/cluster.cuh"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/flash_mma.cuh"
#include "backend/cuda/fp8_gemm_wgmma_common.cuh"
#include "backend/cuda/fp8_gemm_wgmma_ws.h"
#include "backend/cuda/mbarrier.cuh"
#include "backend/cuda/tma.cuh"
#include "backend/cuda/wgmma.cuh"

namespace seam::cuda::fp8_ws_detail {

using fp8_wgmma_detail::cp_async_4;
using fp8_wgmma_detail::load_pair;
using fp8_wgmma_detail::store_pair;

constexpr int kBlockK = 128;           // K per stage: one SW128 line of E4M3 codes per row
constexpr int kLine = 128;             // bytes of one swizzled line
constexpr int kProducerThreads = 128;  // warpgroup 0 (only warp 0 works)
constexpr int kConsumerThreads = 256;  // warpgroups 1 and 2
constexpr int kThreads = kProducerThreads + kConsumerThreads;
constexpr int kConsumerWarps = kConsumerThreads / 32;
constexpr int kFullArrivals = 1 + 32;  // lane 0's expect_tx + each producer lane's cp.async arrival

// A tile of 128 rows x SUB_N * 128 outputs: each consumer warpgroup runs SUB_N m64n128k32 column
// blocks of its 64 rows in turn (one partial register set: SUB_N = 2 holds 128 float32 sums + 64
// partial sums a thread, the most the register file allows next to the producer); fast
// accumulation (no partials) issues SUB_N = 2's two column blocks as one m64n256k32.
template <int SUB_N>
struct WsTiling {
  static_assert(SUB_N == 1 || SUB_N == 2, "128 or 256 outputs a tile");
  static constexpr int kBM = kFp8WsTileRows;  // two consumer warpgroups of m64
  static constexpr int kSubN = 128;           // the wgmma N
  static constexpr int kBN = kSubN * SUB_N;
  static constexpr int kStages = SUB_N == 1 ? 6 : 4;
  static constexpr int kABytes = kBM * kLine;  // x codes of a stage
  static constexpr int kBBytes = kBN * kLine;  // w codes of a stage
  static constexpr int kStageBytes = kABytes + kBBytes;
  static constexpr int kScaleFloats = kBM + kBN;  // a stage's scales: xs of its rows, then ws of its outputs
  static constexpr size_t kScaleBytes = size_t(kStages) * kScaleFloats * 4;
  static constexpr size_t kEpiScaleBytes = size_t(2) * kScaleFloats * 4;  // per-tensor / per-channel: two tiles'
  static constexpr size_t kBarrierBytes = size_t(2) * kStages * 8 + 2 * 8;
  // +1024 to align the start to a swizzle atom (TMA's SW128 destination and the descriptors' base
  // offset 0 need it).
  static constexpr size_t kSmemBytes =
      size_t(kStages) * kStageBytes + kScaleBytes + kEpiScaleBytes + kBarrierBytes + 1024;
  // setmaxnreg budgets, DeepGEMM's (ptxas -v, CUDA 13.0: no spills in any instantiation; the
  // producer's scale loop must stay rolled for 40).
  static constexpr int kProducerRegs = 40;
  static constexpr int kConsumerRegs = 232;
  static_assert(kABytes % 1024 == 0 && kBBytes % 1024 == 0, "stages start on swizzle atoms");
  static_assert(kSmemBytes <= 227 * 1024, "within a block's shared memory");
  static_assert(kProducerRegs * kProducerThreads + kConsumerRegs * kConsumerThreads <= 65536, "the register file");
  static_assert(kScaleFloats % 32 == 0, "a stage's scales split evenly over the producer's lanes");
};


// A tile's column cc (< 256) when the tile starts at out column n0: its out column, n0 + cc, or
// (GLU: w [2 n_out, n_in], the tile's columns 0..127 gate rows and 128..255 up rows of out columns
// n0 ..) n0 + cc % 128; and its weight row, the out column, or (GLU) that column's gate row, or its
// up row n_out + col. The producer's TMA boxes and its scale copies both use them.
template <int GLU>
__device__ __forceinline__ int tile_out_col(int n0, int cc) {
  return n0 + (GLU ? cc % 128 : cc);
}
template <int GLU>
__device__ __forceinline__ int tile_weight_row(int col, int cc, int n_out) {
  return GLU && cc >= 128 ? n_out + col : col;
}

// map_x: codes [n_rows, n_in] (boxes 128 rows x 128); map_w: w codes [n_out, n_in] (boxes
// SUB_N * 128 rows x 128; GLU or a cluster: boxes of 128 rows; GLU: w [2 n_out, n_in]) (tma.cuh).
// xs [n_groups, n_rows] (BLOCK: n_groups = n_in / 128); ws: BLOCK [n_out, n_in / 128], else
// [n_out] (ws_step 1) or [1] (ws_step 0). Cluster (or lone block) c computes tiles (pairs of row
// tiles) c, c + the grid's clusters, ..., the row tile fastest (below).
// FAST (per-tensor / per-channel weights only): the tensor cores accumulate every K block into the
// float32 sums themselves (no partials, no promotion), see the header and fp8_gemm_wgmma_ws.h.
// accumulate: 0 out = product; 1 out += product, the old values loaded pair by pair between the
// stores; 2 out += product, a column block's old values loaded first (residual_prefetch()).
// GLU (SUB_N 2 only): 0 a plain product; 1 + Activation: the gated activation of a [gate | up]
// weight (w [2 n_out, n_in]) — a tile's column block 0 is gate rows n0 .., block 1 the up rows
// n_out + n0 .., and the epilogue writes out [n_rows, n_out] = f(gate) * up (below).
template <typename T, bool BLOCK, int SUB_N, bool FAST, int GLU>
__global__ void __launch_bounds__(kThreads, 1)
    fp8_gemm_wgmma_ws_kernel(const __grid_constant__ CUtensorMap map_x, const __grid_constant__ CUtensorMap map_w,
                             T* out, int64_t out_stride, const float* xs, const float* ws, int ws_step, const T* bias,
                             int n_rows, int n_out, int n_in, int accumulate, int n_cta) {
#if defined(SEAM_WGMMA_ENABLED)
  using Tl = WsTiling<SUB_N>;
  constexpr int kBM = Tl::kBM, kBN = Tl::kBN, kSubN = Tl::kSubN, kStages = Tl::kStages;
  static_assert(GLU == 0 || SUB_N == 2, "the gated activation pairs a tile's two column blocks");
  constexpr int kTileOut = GLU ? kSubN : kBN;  // out's columns a tile
  constexpr int kStageBytes = Tl::kStageBytes, kABytes = Tl::kABytes, kScaleFloats = Tl::kScaleFloats;
  pdl_begin();
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024u - (flash::smem_addr(smem_raw) & 1023u)) & 1023u);
  const uint32_t smem_base = flash::smem_addr(smem);
  float* s_scales = reinterpret_cast<float*>(smem + kStages * kStageBytes);  // [kStages][kScaleFloats]
  float* s_epi = s_scales + kStages * kScaleFloats;                          // [2][kScaleFloats] (!BLOCK)
  const uint32_t full_bar = smem_base + uint32_t(kStages * kStageBytes + Tl::kScaleBytes + Tl::kEpiScaleBytes);
  const uint32_t empty_bar = full_bar + kStages * 8;
  const uint32_t epi_bar = empty_bar + kStages * 8;  // [2]: a slot's epilogue scales were read
  const int tid = threadIdx.x, lane = tid & 31;
  const int n_kb = n_in / kBlockK;
  // Clusters of n_cta (1 or 2, SUB_N 2 only) CTAs along the rows: a cluster takes pairs of row
  // tiles of one column tile; CTA `rank` loads half (128 rows) of the stage's weight box and
  // multicasts it into both CTAs. Pair t: row tile n_cta (t % n_mp) + rank, column tile t / n_mp
  // (n_cta 1: tile t, as before). A row tile past n_m (odd n_m) still takes its half of the
  // weight; its x box is all zero fill and its rows are never stored.
  const int rank = int(cluster::cta_rank()), peer = rank ^ (n_cta - 1);  // n_cta 1: peer = self
  const int n_m = (n_rows + kBM - 1) / kBM, n_mp = (n_m + n_cta - 1) / n_cta;
  const int n_tiles = n_mp * ((n_out + kTileOut - 1) / kTileOut);  // tile pairs (n_cta 2)
  const int first_tile = blockIdx.x / n_cta, tile_step = gridDim.x / n_cta;
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbarrier::init(full_bar + 8 * s, kFullArrivals);
      // Each consumer warp of the cluster's CTAs releases a stage on both CTAs' empty barriers
      // (the multicast fills both), so 2 x the warps: with n_cta 1 both arrivals are the CTA's own.
      mbarrier::init(empty_bar + 8 * s, 2 * kConsumerWarps);
    }
    mbarrier::init(epi_bar, kConsumerWarps);
    mbarrier::init(epi_bar + 8, kConsumerWarps);
    mbarrier::fence_init();
  }
  // The only block-wide barrier (cluster-wide: no CTA signals another's barriers before they are
  // initialised): the roles below never meet again.
  cluster::sync();

  if (tid < kProducerThreads) {
    // ---- producer ----
    wgmma::regs_dealloc<Tl::kProducerRegs>();
    if (tid >= 32) return;  // warps 1-3 of the warpgroup: their registers went to the consumers
    if (lane == 0) {
      tma::prefetch(&map_x);
      tma::prefetch(&map_w);
    }
    int j = 0;  // K blocks this block has loaded, over its tiles: stage j % kStages, round j / kStages
    int i = 0;  // tiles this block has started
    for (int t = first_tile; t < n_tiles; t += tile_step, ++i) {
      const int m0 = (n_cta * (t % n_mp) + rank) * kBM, n0 = (t / n_mp) * kTileOut;
      // Not BLOCK: tile i's epilogue scales go to slot i % 2, which tile i - 2's epilogue read
      // (its completion is phase (i - 2) / 2 of that slot's barrier).
      if (!BLOCK && i >= 2) mbarrier::wait(epi_bar + 8 * (i & 1), ((i >> 1) - 1) & 1);
      for (int kb = 0; kb < n_kb; ++kb, ++j) {
        const int s = j % kStages, round = j / kStages;
        if (round > 0) mbarrier::wait(empty_bar + 8 * s, (round - 1) & 1);  // round - 1's wgmmas retired
        const uint32_t bar = full_bar + 8 * s;
        if (lane == 0) {
          mbarrier::arrive_expect_tx(bar, kStageBytes);
          const uint32_t a = smem_base + s * kStageBytes;
          tma::load_2d(a, &map_x, bar, kb * kBlockK, m0);
          // The weight's column block h: the rows from tile column 128 h's.
          const auto w_row = [&](int h) {
            return tile_weight_row<GLU>(tile_out_col<GLU>(n0, h * kSubN), h * kSubN, n_out);
          };
          if (n_cta == 2) {  // this CTA's half, into both CTAs (boxes of 128 rows)
            tma::load_2d_multicast(a + kABytes + rank * kSubN * kLine, &map_w, bar, kb * kBlockK, w_row(rank),
                                   uint16_t(0x3));
          } else if (GLU != 0) {  // gate then up (boxes of 128)
            tma::load_2d(a + kABytes, &map_w, bar, kb * kBlockK, w_row(0));
            tma::load_2d(a + kABytes + kSubN * kLine, &map_w, bar, kb * kBlockK, w_row(1));
          } else {
            tma::load_2d(a + kABytes, &map_w, bar, kb * kBlockK, n0);
          }
        }
        // Scales: kScaleFloats floats over the 32 lanes. Rows / outputs past the matrix read
        // nothing (zero-filled).
        if (BLOCK || kb == 0) {
          float* sc = BLOCK ? s_scales + s * kScaleFloats : s_epi + (i & 1) * kScaleFloats;
#pragma unroll 1  // the producer's few registers (an unrolled loop keeps every address live)
          for (int q = 0; q < kScaleFloats / 32; ++q) {
            const int c = lane + 32 * q;
            if (c < kBM) {
              const int row = m0 + c;
              const bool valid = row < n_rows;
              cp_async_4(sc + c, valid ? xs + (BLOCK ? int64_t(kb) * n_rows : 0) + row : xs, valid);
            } else {
              const int cc = c - kBM;
              const int col = tile_out_col<GLU>(n0, cc), o = tile_weight_row<GLU>(col, cc, n_out);
              const bool valid = col < n_out;
              cp_async_4(sc + c, valid ? ws + (BLOCK ? int64_t(o) * n_kb + kb : int64_t(o) * ws_step) : ws, valid);
            }
          }
        }
        mbarrier::cp_async_arrive(bar);  // once this lane's copies (if any) landed
      }
    }
    flash::cp_async_wait<0>();  // no copy outlives the thread
    // The tail (CUTLASS's producer load tail): every stage's last round released by the
    // consumers of both CTAs, so no arrival from the peer still targets this CTA's barriers and
    // no multicast of this CTA's still lands in the peer when either exits.
    if (lane == 0)
      for (int jj = j > kStages ? j - kStages : 0; jj < j; ++jj)
        mbarrier::wait(empty_bar + 8 * (jj % kStages), uint32_t((jj / kStages) & 1));
    return;
  }

  // ---- consumers ----
  wgmma::regs_alloc<Tl::kConsumerRegs>();
  const int ctid = tid - kProducerThreads, wg = ctid >> 7, wg_warp = (ctid >> 5) & 3;
  // This thread's accumulator entries: tile rows r_lo (e 0, 1) and r_lo + 8 (e 2, 3), tile
  // columns kSubN sn + 8 q + c0 (e 0, 2) and + 1 (e 1, 3) (wgmma.cuh).
  const int r_lo = wg * 64 + wg_warp * 16 + (lane >> 2), c0 = 2 * (lane & 3);
  const uint32_t a_off = wg * 64 * kLine;  // the warpgroup's 64 rows: 8 atoms in
  const bool paired = out_stride % 2 == 0 && reinterpret_cast<uintptr_t>(out) % (2 * sizeof(T)) == 0;
  float acc[SUB_N][kSubN / 8][4], p0[kSubN / 8][4], p1[kSubN / 8][4];
  // Issues column block sn of the block's jj-th K block into p (a fresh partial; the caller
  // waited for the stage), committed as one group.
  auto issue = [&](int jj, int sn, float(&p)[kSubN / 8][4]) {
    const uint32_t stage = smem_base + (jj % kStages) * kStageBytes;
    const uint64_t desc_a = wgmma::desc_sw128(stage + a_off, 16, 1024);
    const uint64_t desc_b = wgmma::desc_sw128(stage + kABytes + sn * kSubN * kLine, 16, 1024);
    wgmma::fence();  // p was read by an earlier promotion
#pragma unroll
    for (int ks = 0; ks < kBlockK / 32; ++ks)
      wgmma::m64k32_e4m3_ss<kSubN>(p, wgmma::desc_advance(desc_a, ks * 32), wgmma::desc_advance(desc_b, ks * 32),
                                   ks > 0);
    wgmma::commit();
  };
  auto wait_full = [&](int jj) { mbarrier::wait_in_flight(full_bar + 8 * (jj % kStages), (jj / kStages) & 1); };
  // The stage goes back to the producer once the warp's last wgmmas on it retired and (block128)
  // its scales were read: __syncwarp orders every lane's reads before lane 0's (release) arrival.
  const uint32_t empty_own = cluster::map_shared(empty_bar, uint32_t(rank));
  const uint32_t empty_peer = cluster::map_shared(empty_bar, uint32_t(peer));
  auto release = [&](int jj) {
    __syncwarp();
    if (lane == 0) {  // on both CTAs' barriers (n_cta 1: twice on its own)
      mbarrier::arrive_cluster(empty_own + 8 * (jj % kStages));
      mbarrier::arrive_cluster(empty_peer + 8 * (jj % kStages));
    }
  };
  // Adds the landed partial p of column block sn of K block jj into acc[sn] (block128: scaled by
  // the stage's scales); `last`: the stage's last partial, released here.
  auto promote = [&](int jj, int sn, float(&p)[kSubN / 8][4], bool last) {
    wgmma::fence_operands(p);
    if constexpr (BLOCK) {
      const float* sc = s_scales + (jj % kStages) * kScaleFloats;
      const float xa = sc[r_lo], xb = sc[r_lo + 8];
#pragma unroll
      for (int q = 0; q < kSubN / 8; ++q) {
        const int c = kBM + kSubN * sn + 8 * q + c0;
        const float w0 = sc[c], w1 = sc[c + 1];
        acc[sn][q][0] = fmaf(xa * w0, p[q][0], acc[sn][q][0]);
        acc[sn][q][1] = fmaf(xa * w1, p[q][1], acc[sn][q][1]);
        acc[sn][q][2] = fmaf(xb * w0, p[q][2], acc[sn][q][2]);
        acc[sn][q][3] = fmaf(xb * w1, p[q][3], acc[sn][q][3]);
      }
      if (last) release(jj);
    } else {
      if (last) release(jj);
#pragma unroll
      for (int q = 0; q < kSubN / 8; ++q)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[sn][q][e] += p[q][e];
    }
  };
  // FAST: the whole K block (every column block) into acc, committed as one group; `first`: the
  // tile's first K block, whose first k32 step overwrites acc (scale-d off) instead of adding.
  auto issue_acc = [&](int jj, bool first) {
    const uint32_t stage = smem_base + (jj % kStages) * kStageBytes;
    const uint64_t desc_a = wgmma::desc_sw128(stage + a_off, 16, 1024);
    wgmma::fence();
    if constexpr (SUB_N == 2) {
      // One m64n256k32 a k step over both column blocks (their weight rows are contiguous in the
      // stage, and acc[2][16][4] is the n256 fragment's register order): x's operand is read once
      // a k step, not once a column block (-1..2 % against two m64n128k32, twenty-second pass).
      const uint64_t desc_b = wgmma::desc_sw128(stage + kABytes, 16, 1024);
#pragma unroll
      for (int ks = 0; ks < kBlockK / 32; ++ks)
        wgmma::m64k32_e4m3_ss<2 * kSubN>(reinterpret_cast<float(&)[2 * kSubN / 8][4]>(acc),
                                         wgmma::desc_advance(desc_a, ks * 32), wgmma::desc_advance(desc_b, ks * 32),
                                         !first || ks > 0);
    } else {
      const uint64_t desc_b = wgmma::desc_sw128(stage + kABytes, 16, 1024);
#pragma unroll
      for (int ks = 0; ks < kBlockK / 32; ++ks)
        wgmma::m64k32_e4m3_ss<kSubN>(acc[0], wgmma::desc_advance(desc_a, ks * 32),
                                     wgmma::desc_advance(desc_b, ks * 32), !first || ks > 0);
    }
    wgmma::commit();
  };
  int j = 0, i = 0;  // as the producer's
  for (int t = first_tile; t < n_tiles; t += tile_step, ++i) {
    const int m0 = (n_cta * (t % n_mp) + rank) * kBM, n0 = (t / n_mp) * kTileOut;
    if constexpr (FAST) {
      // Fast accumulation (the FP8FastAccum schedules of CUTLASS that vLLM's FP8 GEMMs run): K
      // block kb + 1 is issued before kb is waited for, so each warpgroup keeps a block queued
      // behind the running one and its tensor-core work never waits on a promotion. The wgmmas
      // of successive blocks chain on the same accumulators (the hardware orders them); the
      // stage of block kb goes back once its group retired (wait_group 1 after kb + 1's issue).
      wait_full(j);
      issue_acc(j, true);
      for (int kb = 1; kb < n_kb; ++kb) {
        wait_full(j + kb);
        issue_acc(j + kb, false);
        wgmma::wait<1>();
        release(j + kb - 1);
      }
      wgmma::wait<0>();
#pragma unroll
      for (int sn = 0; sn < SUB_N; ++sn) wgmma::fence_operands(acc[sn]);
      release(j + n_kb - 1);
      j += n_kb;
    } else {
#pragma unroll
    for (int sn = 0; sn < SUB_N; ++sn)
#pragma unroll
      for (int q = 0; q < kSubN / 8; ++q) acc[sn][q][0] = acc[sn][q][1] = acc[sn][q][2] = acc[sn][q][3] = 0.f;
    if constexpr (SUB_N == 1 && !BLOCK) {
      // Overlapped: K block kb + 1's wgmmas (the other partial) are issued before kb's partial is
      // waited for and promoted, so the warpgroup's tensor-core work runs through its promotions.
      // The loop takes blocks in pairs with one group in flight across the back edge and the
      // odd / even tail peeled after it: with a group in flight across a branch (or the C++ poll
      // loop of mbarrier::wait) ptxas serialises every wgmma (C7514 / C7518; none here, CUDA 13.0).
      // Not for block128: its scaled promotion next to two partials spills and serialises (C7514).
      wait_full(j);
      issue(j, 0, p0);
      int kb = 0;
      for (; kb + 2 < n_kb; kb += 2) {  // in flight: block kb in p0
        wait_full(j + kb + 1);
        issue(j + kb + 1, 0, p1);
        wgmma::wait<1>();
        promote(j + kb, 0, p0, true);
        wait_full(j + kb + 2);
        issue(j + kb + 2, 0, p0);
        wgmma::wait<1>();
        promote(j + kb + 1, 0, p1, true);
      }
      if (kb + 1 < n_kb) {  // two blocks left: kb (in flight in p0) and kb + 1
        wait_full(j + kb + 1);
        issue(j + kb + 1, 0, p1);
        wgmma::wait<1>();
        promote(j + kb, 0, p0, true);
        wgmma::wait<0>();
        promote(j + kb + 1, 0, p1, true);
      } else {  // one: kb
        wgmma::wait<0>();
        promote(j + kb, 0, p0, true);
      }
      j += n_kb;
    } else {
      // Column blocks in turn through one partial (the sums of two column blocks and two partials
      // would not fit the registers): the other warpgroup's wgmmas cover each promotion.
      // Nothing is in flight across a wait or a branch.
      for (int kb = 0; kb < n_kb; ++kb, ++j) {
        wait_full(j);
#pragma unroll
        for (int sn = 0; sn < SUB_N; ++sn) {
          issue(j, sn, p0);
          wgmma::wait<0>();
          promote(j, sn, p0, sn == SUB_N - 1);
        }
      }
    }
    }  // !FAST

    // Epilogue (fp8_gemm_wgmma.cu's), while the producer fills the next tile's first stages:
    // pairs of adjacent outputs (the column is even, and N % 8 == 0 keeps o + 1 < N with o), one
    // aligned store each where the row stride and out allow it. Not BLOCK: the scales are in slot
    // i % 2 (published with the tile's K block 0, whose full barrier this thread waited on).
    const float* se = s_epi + (i & 1) * kScaleFloats;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t row = int64_t(m0) + r_lo + 8 * h;
      if (row >= n_rows) continue;
      const float x_s = BLOCK ? 1.f : se[r_lo + 8 * h];
      T* dst_row = out + row * out_stride;
      if constexpr (GLU != 0) {
        // gate and up of out column o, each rounded to T as the plain epilogue stores them, then
        // f(gate) * up as gated_act.cu computes it: bit-equal with the product into [gate | up]
        // followed by the gated activation (no bias: the GLU's weight has none; no accumulate).
        constexpr Activation F = Activation(GLU - 1);
        const auto scaled = [&](int sn, int q, int e, int c) {
          const float y = acc[sn][q][2 * h + e];
          return to_float(from_float<T>(BLOCK ? y : (x_s * se[kBM + c]) * y));
        };
#pragma unroll
        for (int q = 0; q < kSubN / 8; ++q) {
          const int c = 8 * q + c0;
          const int64_t o = int64_t(n0) + c;
          if (o >= n_out) continue;
          const float a0 = activate<F>(scaled(0, q, 0, c)) * scaled(1, q, 0, kSubN + c);
          const float a1 = activate<F>(scaled(0, q, 1, c + 1)) * scaled(1, q, 1, kSubN + c + 1);
          store_pair(dst_row + o, a0, a1, false, paired);
        }
      } else {
#pragma unroll
      for (int sn = 0; sn < SUB_N; ++sn) {
        // out += product (accumulate 2, the default): the column block's old values are all
        // loaded before its first store (stores may alias later loads as far as the compiler
        // knows, so store_pair's own loads, accumulate 1, are one round trip a pair); then
        // old + y, rounded once, as store_pair adds. BLOCK keeps store_pair's loads: its promoted
        // sums leave no room for 32 more registers (ptxas spills).
        const bool prefetch = !BLOCK && accumulate == 2;
        float2 old[kSubN / 8];
        if (prefetch) {
#pragma unroll
          for (int q = 0; q < kSubN / 8; ++q) {
            const int64_t o = int64_t(n0) + kSubN * sn + 8 * q + c0;
            old[q] = o < n_out ? load_pair(dst_row + o, paired) : make_float2(0.f, 0.f);
          }
        }
#pragma unroll
        for (int q = 0; q < kSubN / 8; ++q) {
          const int c = kSubN * sn + 8 * q + c0;
          const int64_t o = int64_t(n0) + c;
          if (o >= n_out) continue;
          float y0 = acc[sn][q][2 * h], y1 = acc[sn][q][2 * h + 1];
          if constexpr (!BLOCK) {
            y0 = (x_s * se[kBM + c]) * y0;
            y1 = (x_s * se[kBM + c + 1]) * y1;
          }
          if (bias) {
            y0 += to_float(bias[o]);
            y1 += to_float(bias[o + 1]);
          }
          if (prefetch) {
            y0 = old[q].x + y0;
            y1 = old[q].y + y1;
          }
          store_pair(dst_row + o, y0, y1, accumulate != 0 && !prefetch, paired);
        }
      }
      }  // !GLU
    }
    if constexpr (!BLOCK) {  // slot i % 2 is free for tile i + 2's scales
      __syncwarp();
      if (lane == 0) mbarrier::arrive(epi_bar + 8 * (i & 1));
    }
  }
#else
  // Built without sm_90a: fp8_gemm_wgmma_ws_applies is false, the kernel never launched.
  (void)map_x;
  (void)map_w;
  __trap();
#endif
}

}  // namespace seam::cuda::fp8_ws_detail
