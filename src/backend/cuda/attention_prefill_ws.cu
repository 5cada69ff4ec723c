// Flash attention for prefill rows on Hopper tensor cores, warp-specialised (sm_90a), head dim 128,
// a bf16/f16 KV cache. Same result as flash_prefill_wgmma_kernel (attention_prefill_wgmma.cu: read
// its header first): the same rows and grid order (prefill_block.cuh), the same SW128 tiles, the
// same wgmmas, masks and online softmax (flash_mma.cuh), window and soft-capping included. What
// changes is who copies and who waits.
//
// Why: in the one-role kernel every thread issues its share of each tile's cp.async gather, and
// the two warpgroups meet at a block barrier every tile, so both run their softmax (exp2 on the
// SFU: half the tensor cores' time at d 128) at the same moment and the tensor cores idle through
// both softmax tails, the barrier and the copy issue: ~295-330 TFLOP/s at 4,096 causal tokens.
//
// Structure (FlashAttention-3's forward kernel on Hopper, with its paged-KV cp.async producer):
//  * 384 threads, one block an SM (225 KB of shared memory: Q 32 KB + 3 stages x (K 32 KB + V
//    32 KB)). Warpgroup 0 is the producer (setmaxnreg 40), warpgroups 1 and 2 the consumers
//    (setmaxnreg 232), 64 query rows each.
//  * The producer gathers K and V tiles of 128 keys through the page table with cp.async (16-byte
//    chunks, a lane pair a 32-byte sector, 16 rows a warp instruction, zero-filled past the
//    block's last key) and
//    signals each with cp.async.mbarrier.arrive.noinc on the tile's full barrier. The page-table
//    slots come a tile ahead, one coalesced load a lane, and reach the copies by shuffle: a first
//    version loaded them where the copies used them, 4 loads in flight at a time, and its producer
//    took ~5,600 cycles a tile on those loads' latency (ncu: tensor pipe 36 % busy, L2 18 %) —
//    no faster than the one-role kernel. Its order is K_0,
//    then K_{t+1}, V_t for each t, then V_last: a consumer needs K_{t+1} (for S_{t+1}) before V_t
//    (for P_t V_t), and K's stage frees a step before V's.
//  * Each consumer warpgroup loads its own 64 Q rows once (cp.async, then a warpgroup barrier),
//    then runs the one-role kernel's loop without the block barrier: iteration t issues
//    S_{t+1} = Q K_{t+1}^T and O += P_t V_t, waits for S only, runs the softmax of tile t + 1
//    while P_t V_t runs, then waits for it, rescales O and packs P_{t+1}.
//  * Ping-pong (FA3's warp-scheduler barrier): the two consumer warpgroups take turns issuing
//    their wgmmas (named barriers 1 and 2), so one warpgroup's softmax runs while the other's
//    wgmmas hold the tensor cores (SEAM_PREFILL_WS_TURNS=0, a diagnostic switch, drops the turns). Warpgroup 0 (the lower rows) goes first; every turn ends with
//    an arrive that lets the other warpgroup's next turn start; the second warpgroup's last turn
//    arrives on nothing (nobody waits for it).
//  * Barriers a stage: full_k[s], full_v[s] (128 arrivals: the producer's threads, each once its
//    copies have landed), empty_k[s], empty_v[s] (8 arrivals: lane 0 of each consumer warp once
//    the wgmma that read the tile has been waited for). Tile t (relative r = t - first) uses stage
//    r % 3 in round r / 3: consumers wait on full's parity (r / 3) & 1, the producer, before
//    refilling a stage in round k > 0, on empty's parity (k - 1) & 1. Neither runs two phases
//    ahead of its waiter (a refill needs the round released, which needs both consumers past
//    their wait on it).
//  * Both consumer warpgroups walk every tile of the block; a tile past a warpgroup's last
//    position is masked for all its rows: its wgmmas still run on a zero P (wgmma under a branch
//    ptxas cannot prove uniform is serialised), only its softmax is skipped — as in the one-role
//    kernel.
//
// ptxas (CUDA 13.0) and wgmma groups in flight: the consumers wait on mbarriers with
// mbarrier::wait_in_flight (one asm statement) and the loop's last iteration is peeled, so no
// wgmma sits under a loop branch of its own (fp8_gemm_wgmma_ws_kernel.cuh did the same for C7518).
#include "backend/cuda/attention_prefill_ws.h"

#include <climits>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/diagnostic_switch.h"
#include "backend/cuda/flash_mma.cuh"
#include "backend/cuda/mbarrier.cuh"
#include "backend/cuda/prefill_block.cuh"
#include "backend/cuda/sm90a_device.h"
#include "backend/cuda/wgmma.cuh"
#include "backend/cuda/wgmma_prefill_tile.cuh"

namespace seam::cuda {

namespace {

struct WsTiling {
  static constexpr int kD = 128;
  static constexpr int kConsumers = 2;                    // consumer warpgroups
  static constexpr int kThreads = (kConsumers + 1) * 128; // + the producer warpgroup
  static constexpr int kWgRows = 64;                      // rows of one consumer warpgroup (wgmma M)
  static constexpr int kBlockM = kConsumers * kWgRows;    // query rows per block
  static constexpr int kBlockN = 128;                     // keys per stage (wgmma N of S)
  static constexpr int kLine = 128;                       // bytes of one swizzled line: 64 elements
  static constexpr int kQHalf = kBlockM * kLine;          // bytes of one 64-column half of Q
  static constexpr int kKvHalf = kBlockN * kLine;         // ... of a K or V tile
  static constexpr int kQBytes = 2 * kQHalf;
  static constexpr int kKvBytes = 2 * kKvHalf;
  static constexpr int kStages = 3;
  static constexpr size_t kSmemBytes = size_t(kQBytes) + kStages * 2 * size_t(kKvBytes) + 1024;
  static constexpr int kProducerRegs = 40;
  static constexpr int kConsumerRegs = 232;
  static constexpr int kEmptyArrivals = kConsumers * 4;  // lane 0 of each consumer warp
  // Named barriers (0 is __syncthreads): the consumers' turns, then each consumer's Q barrier.
  static constexpr int kBarTurn = 1;   // + consumer index
  static constexpr int kBarQ = 3;      // + consumer index
  static_assert(kSmemBytes <= 227 * 1024, "within a block's shared memory");
  static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * kConsumers <= 65536, "the register file");
  static_assert(kD == wgmma_prefill::kD && kBlockN == wgmma_prefill::kBlockN && kLine == wgmma_prefill::kLine,
                "wgmma_prefill_tile.cuh's tile");
};

// Named barriers: `sync` waits until `n` threads (its own warpgroup's and the arriving ones)
// have reached barrier `id`; `arrive` counts the caller's warps without waiting.
template <int N>
__device__ __forceinline__ void bar_sync(int id) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "n"(N) : "memory");
}
template <int N>
__device__ __forceinline__ void bar_arrive(int id) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "n"(N) : "memory");
}

// TURNS: the consumers take turns on the tensor cores (ping-pong); false only under the
// diagnostic switch SEAM_PREFILL_WS_TURNS=0, to measure what the turns give.
template <typename T, bool OPTS, bool TURNS>
__global__ void __launch_bounds__(WsTiling::kThreads, 1) flash_prefill_ws_kernel(AttentionParams p) {
#if defined(SEAM_WGMMA_ENABLED)
  using Tl = WsTiling;
  constexpr int D = Tl::kD, kBlockN = Tl::kBlockN, kWgRows = Tl::kWgRows, kStages = Tl::kStages;
  constexpr int kChunks = D / 8;  // 16-byte chunks of a row
  pdl_begin();
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024u - (flash::smem_addr(smem_raw) & 1023u)) & 1023u);
  const uint32_t smem_base = flash::smem_addr(smem);  // 1024-aligned: descriptors' base offset 0
  const int tid = threadIdx.x;
  // Warp-uniform for ptxas (CUTLASS's canonical_warp_group_idx): 0 the producer, 1.. consumers.
  const int role = __shfl_sync(0xffffffffu, tid / 128, 0);
  const int group = p.group;

  __shared__ flash::PrefillBlock<Tl::kConsumers> info;
  __shared__ __align__(8) uint64_t bars[4][kStages];  // full_k, full_v, empty_k, empty_v
  if (tid == 0) {
    flash::locate_prefill_block<Tl::kBlockM>(p, info);
    for (int s = 0; s < kStages; ++s) {
      mbarrier::init(flash::smem_addr(&bars[0][s]), 128);
      mbarrier::init(flash::smem_addr(&bars[1][s]), 128);
      mbarrier::init(flash::smem_addr(&bars[2][s]), Tl::kEmptyArrivals);
      mbarrier::init(flash::smem_addr(&bars[3][s]), Tl::kEmptyArrivals);
    }
    mbarrier::fence_init();
  }
  __syncthreads();
  if (info.seq < 0) return;  // block-uniform; the grid is an upper bound on the tiles

  const int key_end = info.key_end, n_rows = info.n_rows;
  const int window = OPTS ? p.window : 0;
  // With a window the walk starts at the tile of the first key the block's first row sees.
  const int first_tile =
      OPTS ? window_start(info.first_pos + info.tile * Tl::kBlockM / group, window) / kBlockN : 0;
  const int n_kv_tiles = (key_end + kBlockN - 1) / kBlockN;
  auto stage_of = [&](int t) { return (t - first_tile) % kStages; };
  auto parity_of = [&](int t) { return uint32_t(((t - first_tile) / kStages) & 1); };
  auto k_addr = [&](int t) { return uint32_t(Tl::kQBytes + stage_of(t) * 2 * Tl::kKvBytes); };
  auto bar = [&](int which, int t) { return flash::smem_addr(&bars[which][stage_of(t)]); };

  if (role == 0) {
    // ---- Producer: K_first, then K_{t+1} and V_t for each t, then V_last.
    wgmma::regs_dealloc<Tl::kProducerRegs>();
    const int warp = tid >> 5, lane = tid & 31, pair = lane & 1;
    const int32_t* slots = info.slots;
    const int n_kv_heads = p.n_kv_heads;
    const T* k_cache = static_cast<const T*>(p.k_cache) + int64_t(info.kvh) * D;
    const T* v_cache = static_cast<const T*>(p.v_cache) + int64_t(info.kvh) * D;
    // Page-table slots: lane j of warp w holds the slot of the tile's key 32 w + j (one coalesced
    // load a tile, issued a tile ahead); a gather takes its rows' slots by shuffle, so no copy waits
    // on a load. V_t reuses K_t's slots.
    auto lane_slot = [&](int t) -> int32_t {
      const int key = t * kBlockN + warp * 32 + lane;
      return t < n_kv_tiles && key < key_end ? __ldg(slots + key) : 0;
    };
    // which: 0 K, 1 V. Waits for the stage's previous tile to be released (round > 0), gathers
    // the tile and arrives on its full barrier once the copies land. Keys at or past key_end are
    // zero-filled: their scores are masked, and zero V rows keep 0 * garbage out of the output.
    // A thread copies 2 rows of warp w's 32 (32 w + lane / 2 and + 16), chunks 2 m + lane % 2 of
    // each: a lane pair covers a 32-byte sector, an instruction 16 rows. The row's source pointer
    // is computed once a tile; the chunks are immediate offsets from it, and the swizzled
    // destination chunk (chunk & 7) ^ (row & 7) = (2 m & 7) ^ q with q = lane % 2 ^ row & 7, so a
    // copy costs ~3 instructions (the first form of this loop, a shuffle and a 64-bit multiply a
    // copy with the registers reused, took ~550 a tile a warp and bound the kernel: call 4).
    auto load = [&](int which, int t, int32_t slot_reg) {
      const int round = (t - first_tile) / kStages;
      if (round > 0) mbarrier::wait(bar(2 + which, t), uint32_t((round - 1) & 1));
      unsigned char* dst = smem + k_addr(t) + which * Tl::kKvBytes;
      const T* cache = which == 0 ? k_cache : v_cache;
      const int key0 = t * kBlockN;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = (lane >> 1) + 16 * h, row = warp * 32 + r;
        const int64_t slot = __shfl_sync(0xffffffffu, slot_reg, r);
        const bool valid = key0 + row < key_end;
        const T* src = cache + slot * n_kv_heads * D + pair * 8;
        unsigned char* drow = dst + row * Tl::kLine;
        const int q = pair ^ (row & 7);
#pragma unroll
        for (int m = 0; m < 8; ++m)
          flash::cp_async_16(drow + (m >> 2) * Tl::kKvHalf + ((((2 * m) & 7) ^ q) << 4), src + m * 16, valid);
      }
      mbarrier::cp_async_arrive(bar(which, t));
    };
    int32_t slot_k = lane_slot(first_tile), slot_next = lane_slot(first_tile + 1);
    load(0, first_tile, slot_k);
    int32_t slot_v = slot_k;
    for (int t = first_tile; t < n_kv_tiles; ++t) {
      if (t + 1 < n_kv_tiles) {
        slot_k = slot_next;
        slot_next = lane_slot(t + 2);
        load(0, t + 1, slot_k);
      }
      load(1, t, slot_v);
      slot_v = slot_k;
    }
    asm volatile("cp.async.wait_all;\n" ::: "memory");  // nothing in flight when the warps exit
    return;
  }

  // ---- Consumers.
  wgmma::regs_alloc<Tl::kConsumerRegs>();
  const int wg = role - 1, ctid = tid - 128 * role, lane = tid & 31, wg_warp = (tid >> 5) & 3;
  // This warpgroup's 64 Q rows (rows past the end zero-filled), then a warpgroup barrier.
  {
    const T* q = static_cast<const T*>(p.q);
#pragma unroll 4
    for (int c = ctid; c < kWgRows * kChunks; c += 128) {
      const int r = wg * kWgRows + c / kChunks, chunk = c % kChunks, row = info.tile * Tl::kBlockM + r;
      const bool valid = row < n_rows;
      flash::cp_async_16(smem + wgmma::sw128_chunk_offset(r, chunk, Tl::kQHalf),
                         valid ? q + flash::prefill_row_offset<D>(info, group, p.q_stride, row) + chunk * 8 : q, valid);
    }
    flash::cp_async_commit();
    flash::cp_async_wait<0>();
    wgmma::fence_proxy_async();
    bar_sync<128>(Tl::kBarQ + wg);
  }
  const int turn_bar = Tl::kBarTurn + wg, other_turn_bar = Tl::kBarTurn + (1 - wg);
  if (TURNS && wg == 1) bar_arrive<256>(Tl::kBarTurn + 0);  // warpgroup 0 takes the first turn

  float o[D / 8][4];  // the warp's 16 rows x D: wgmma accumulator layout
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
#pragma unroll
  for (int d = 0; d < D / 8; ++d) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.f;
  const bool capped = OPTS && p.softcap > 0.f;
  const float cap_in = capped ? p.scale / p.softcap : 0.f;
  const float scale_log2 = (capped ? 1.f : p.scale) * 1.4426950408889634f;
  const int wg_key_end = info.group_key_end[wg], wg_unmasked_end = info.group_unmasked_end[wg];
  const int row_lo = info.tile * Tl::kBlockM + wg * kWgRows + wg_warp * 16 + (lane >> 2);
  const int pos_lo = info.first_pos + row_lo / group, pos_hi = info.first_pos + (row_lo + 8) / group;
  const uint64_t q_desc = wgmma::desc_sw128(smem_base + wg * kWgRows * Tl::kLine, 16, 1024);

  float s[kBlockN / 8][4];
  uint32_t pa[kBlockN / 16][4];
  auto issue_s = [&](int t) {
    wgmma_prefill::issue_s<T, Tl::kQHalf, Tl::kKvHalf>(s, q_desc, wgmma::desc_sw128(smem_base + k_addr(t), 16, 1024));
    wgmma::commit();
  };
  auto issue_pv = [&](int t) {
    wgmma_prefill::issue_pv<T>(o, pa, wgmma::desc_sw128(smem_base + k_addr(t) + Tl::kKvBytes, Tl::kKvHalf, 1024));
    wgmma::commit();
  };
  // The tile's copies have landed (the producer's arrivals): then the async proxy may read them.
  auto wait_full = [&](int which, int t) {
    mbarrier::wait_in_flight(bar(which, t), parity_of(t));
    wgmma::fence_proxy_async();
  };
  auto release = [&](int which, int t) {
    if (lane == 0) mbarrier::arrive(bar(2 + which, t));
  };
  auto softmax_tile = [&](int t, float (&alpha)[2]) {  // the mask's fields read where used, as before
    const wgmma_prefill::TileMask mask{pos_lo, pos_hi, wg_key_end, wg_unmasked_end, window,
                                       capped, p.softcap, cap_in, scale_log2};
    return wgmma_prefill::softmax_tile(s, m, l, alpha, t, mask, lane);
  };
  auto turn_begin = [&] {
    if constexpr (TURNS) bar_sync<256>(turn_bar);
  };
  auto turn_end = [&] {
    if constexpr (TURNS) bar_arrive<256>(other_turn_bar);
  };
  auto zero_p = [&] {
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) pa[kk][0] = pa[kk][1] = pa[kk][2] = pa[kk][3] = 0u;
  };

  // First tile: S alone (its turn), then its softmax.
  wait_full(0, first_tile);
  turn_begin();
  issue_s(first_tile);
  turn_end();
  wgmma::wait<0>();
  wgmma::fence_operands(s);
  release(0, first_tile);
  if (first_tile * kBlockN < wg_key_end) {
    float alpha[2];
    softmax_tile(first_tile, alpha);  // o is still zero: no rescale
    flash::pack_p_atoms<T, kBlockN / 8, 1>(flash::one_atom(pa), flash::one_atom(s));
  } else {
    zero_p();
  }
  // Tiles first .. n - 2: S_{t+1} and P_t V_t in one turn; the softmax of t + 1 under P_t V_t.
  for (int it = first_tile; it + 1 < n_kv_tiles; ++it) {
    const bool run_next = (it + 1) * kBlockN < wg_key_end;  // warpgroup-uniform
    wait_full(0, it + 1);
    turn_begin();
    issue_s(it + 1);
    wait_full(1, it);
    issue_pv(it);
    turn_end();
    wgmma::wait<1>();  // S_{t+1} has landed; P_t V_t may still run
    wgmma::fence_operands(s);
    release(0, it + 1);
    float alpha[2] = {1.f, 1.f};
    bool grew = false;
    if (run_next) grew = softmax_tile(it + 1, alpha);
    wgmma::wait<0>();  // P_t V_t has landed: o is final for tile t, pa free
    wgmma::fence_operands(o);
    wgmma::fence_operands(pa);
    release(1, it);
    if (run_next) {
      if (grew) flash::rescale_rows<D>(o, alpha);
      flash::pack_p_atoms<T, kBlockN / 8, 1>(flash::one_atom(pa), flash::one_atom(s));
    } else {
      zero_p();
    }
  }
  // The last tile: P V alone. Warpgroup 1's last turn lets nobody in (warpgroup 0 has no turn left).
  {
    const int last = n_kv_tiles - 1;
    wait_full(1, last);
    turn_begin();
    issue_pv(last);
    if (wg == 0) turn_end();
    wgmma::wait<0>();
    wgmma::fence_operands(o);
  }

  wgmma_prefill::store_rows<T>(o, l, 1.f, p, info, row_lo, n_rows, lane);  // normalise, store the valid rows
#else
  // Built without sm_90a: flash_prefill_ws_supported is false, the kernel never launched.
  __trap();
#endif
}

template <typename T, bool OPTS, bool TURNS>
void launch_opts(const AttentionParams& p, cudaStream_t stream) {
  using Tl = WsTiling;
  once_per_device(reinterpret_cast<const void*>(flash_prefill_ws_kernel<T, OPTS, TURNS>), [] {
    SEAM_CUDA_CHECK(cudaFuncSetAttribute(flash_prefill_ws_kernel<T, OPTS, TURNS>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, int(Tl::kSmemBytes)));
  });
  const int64_t n_blocks = flash::prefill_grid_blocks(p, Tl::kBlockM);
  SEAM_CHECK(n_blocks <= INT_MAX, "flash prefill (ws): ", n_blocks, " blocks exceed the grid limit");
  launch_kernel(flash_prefill_ws_kernel<T, OPTS, TURNS>, dim3(unsigned(n_blocks)), Tl::kThreads, Tl::kSmemBytes, stream, p);
  SEAM_CUDA_CHECK_LAUNCH();
}

template <typename T>
void launch_typed(const AttentionParams& p, cudaStream_t stream) {
  static const bool turns = env_choice("SEAM_PREFILL_WS_TURNS", 1, {0, 1}) == 1;  // a diagnostic switch
  const bool opts = p.window > 0 || p.softcap > 0.f;
  if (!turns) return opts ? launch_opts<T, true, false>(p, stream) : launch_opts<T, false, false>(p, stream);
  opts ? launch_opts<T, true, true>(p, stream) : launch_opts<T, false, true>(p, stream);
}

}  // namespace

bool flash_prefill_ws_supported(DType dtype, int head_dim, bool kv_fp8) {
#if defined(SEAM_CUDA_SM90A)
  static const bool device_ok = current_device_is_sm90();  // sm_90a code runs on 9.0 only
  return (dtype == DType::bf16 || dtype == DType::f16) && head_dim == WsTiling::kD && !kv_fp8 && device_ok;
#else
  (void)dtype;
  (void)head_dim;
  (void)kv_fp8;
  return false;
#endif
}

void launch_flash_prefill_ws(const AttentionParams& p, DType dtype, cudaStream_t stream) {
  if (p.n_prefill_seqs == 0 || p.n_prefill_tokens == 0) return;
  SEAM_CHECK(flash_prefill_ws_supported(dtype, p.head_dim, p.kv_fp8), "flash prefill (ws): not available for ",
             dtype_name(dtype), " head dim ", p.head_dim, p.kv_fp8 ? " with an FP8 cache" : "",
             " (needs an sm_90a build, bf16/f16, d 128, a bf16/f16 cache, a CC 9.0 GPU)");
  SEAM_CHECK(p.scale > 0.f, "flash prefill (ws): softmax scale must be positive, got ", p.scale);
  if (dtype == DType::bf16) return launch_typed<__nv_bfloat16>(p, stream);
  launch_typed<__half>(p, stream);
}

}  // namespace seam::cuda
