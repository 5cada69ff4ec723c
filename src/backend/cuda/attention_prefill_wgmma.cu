// Flash attention for prefill rows on Hopper tensor cores (wgmma, sm_90a), head dim 128.
//
// Computes exactly what flash_prefill_kernel (attention_prefill.cu) computes (window and
// soft-capping included: the walk starts at the block's first windowed tile), with the same
// rows and grid order (prefill_block.cuh: rows packed by GQA group, heavy row tiles first,
// the kv head fastest in the block id) and KV gather: page-table slots fetched a tile
// ahead, cp.async gathers zero-filled past
// the block's last needed key, the causal mask applied only on steps that cross a row's
// position, and no softmax for tiles past a warpgroup's last position (their P is zero).
//
// A block = 2 warpgroups (256 threads) x 64 rows = 128 rows of one (sequence, kv head).
// Q [128 rows][128] is loaded once into shared memory; K and V tiles of 128 keys go through
// a 3-stage ring (see the pipeline in the kernel). All three are stored as two 64-column
// halves in the 128-byte-swizzled layout (wgmma.cuh), so each is a wgmma operand without
// any transpose: Q and K are K-major operands of S = Q K^T (m64n128k16, both from shared
// memory, 8 k-steps), and V [keys][d] is the MN-major ("transposed") B operand of O += P V
// (m64n128k16, P from registers).
// The accumulators have the mma.sync fragment layout, so the online softmax and P packing
// are flash_mma.cuh's. Each thread holds O (64 fp32) and S (64 fp32) of its 2 x 64 entries.
//
// Not warp-specialised: every thread issues its share of each tile's cp.async gather, and
// the two warpgroups meet at one block barrier per tile. Measured on the H200 (4,096 causal
// tokens, 32/8 heads): 417 us = 330 TFLOP/s against mma.sync's 498 us (docs/performance.md);
// FlashAttention-3's producer warpgroup and consumer ping-pong are the next step.
//
// An FP8 E4M3 cache (KV = Fp8, kv_fp8_tile.cuh): tiles of codes are gathered into one staging
// tile ([K|V][128 keys][128] bytes) and dequantised by all threads into a ring of two bf16/f16
// K/V stages in the SW128 layout, which the unchanged wgmmas read (Q 32 KB + 2 x 64 KB + 32 KB
// = 193 KB). The end of iteration t dequantises tile t + 2 (its codes landed during iteration
// t) into the stage tile t's P V just finished with, then gathers the codes of tile t + 3: two
// block barriers a tile instead of one. k_scale rides in p.scale, v_scale multiplies the output.
#include "backend/cuda/attention_prefill_wgmma.h"

#include <climits>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/flash_mma.cuh"
#include "backend/cuda/kv_fp8_tile.cuh"
#include "backend/cuda/prefill_block.cuh"
#include "backend/cuda/sm90a_device.h"
#include "backend/cuda/wgmma.cuh"
#include "backend/cuda/wgmma_prefill_tile.cuh"

namespace seam::cuda {

namespace {

struct WgmmaTiling {
  static constexpr int kD = 128;
  static constexpr int kWarpgroups = 2;
  static constexpr int kThreads = kWarpgroups * 128;
  static constexpr int kWgRows = 64;                      // rows of one warpgroup (wgmma M)
  static constexpr int kBlockM = kWarpgroups * kWgRows;   // query rows per block
  static constexpr int kBlockN = 128;                     // keys per shared-memory stage (wgmma N of S)
  static constexpr int kLine = 128;                       // bytes of one swizzled line: 64 elements
  static constexpr int kQHalf = kBlockM * kLine;          // bytes of one 64-column half of Q
  static constexpr int kKvHalf = kBlockN * kLine;         // ... of a K or V tile
  static constexpr int kQBytes = 2 * kQHalf;              // [2 halves][kBlockM][64]
  static constexpr int kKvBytes = 2 * kKvHalf;            // [2 halves][kBlockN][64]
  static constexpr int kStages = 3;                       // K/V ring depth (see the pipeline below)
  // Q, then [stage][K|V]; +1024 to align the start to a swizzle atom. 225 KB of the 227 KB
  // a block may have.
  static constexpr size_t kSmemBytes = size_t(kQBytes) + kStages * 2 * size_t(kKvBytes) + 1024;
  // FP8 cache: two T stages, then the staging tile of codes [K|V][kBlockN][kD] bytes.
  static constexpr int kFp8Stages = 2;
  static constexpr int kCodeTileBytes = kBlockN * kD;
  static constexpr size_t kSmemBytesFp8 =
      size_t(kQBytes) + kFp8Stages * 2 * size_t(kKvBytes) + 2 * size_t(kCodeTileBytes) + 1024;
  template <typename KV>
  static constexpr size_t smem_bytes() {
    return kIsFp8<KV> ? kSmemBytesFp8 : kSmemBytes;
  }
};
static_assert(WgmmaTiling::kD == wgmma_prefill::kD && WgmmaTiling::kBlockN == wgmma_prefill::kBlockN &&
                  WgmmaTiling::kLine == wgmma_prefill::kLine,
              "wgmma_prefill_tile.cuh's tile");


// OPTS: the instantiation that honours p.window and p.softcap; plain causal attention keeps
// its own (210 registers without the options' code, 243 with it).
template <typename T, typename KV, bool OPTS>
__global__ void __launch_bounds__(WgmmaTiling::kThreads, 1) flash_prefill_wgmma_kernel(AttentionParams p) {
#if defined(SEAM_WGMMA_ENABLED)
  using Tl = WgmmaTiling;
  constexpr bool kFp8 = kIsFp8<KV>;
  constexpr int kTStages = kFp8 ? Tl::kFp8Stages : Tl::kStages;  // stages of T tiles the wgmmas read
  constexpr int D = Tl::kD, kBlockM = Tl::kBlockM, kBlockN = Tl::kBlockN, kWgRows = Tl::kWgRows;
  constexpr int kChunks = D / 8;  // 16-byte chunks of a row
  pdl_begin();
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024u - (flash::smem_addr(smem_raw) & 1023u)) & 1023u);
  const uint32_t smem_base = flash::smem_addr(smem);  // 1024-aligned: descriptors' base offset 0
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wg = warp >> 2, wg_warp = warp & 3;
  const int group = p.group;

  __shared__ flash::PrefillBlock<Tl::kWarpgroups> info;  // row groups: the warpgroups
  if (tid == 0) flash::locate_prefill_block<kBlockM>(p, info);
  __syncthreads();
  if (info.seq < 0) return;  // block-uniform; the grid is an upper bound on the tiles

  const int key_end = info.key_end, n_rows = info.n_rows;
  auto row_off = [&](int64_t stride, int row) { return flash::prefill_row_offset<D>(info, group, stride, row); };
  // The block's Q rows join tile 0's cp.async group (committed below); rows past the end are zero-filled.
  unsigned char* q_smem = smem;  // [2][kBlockM][64] SW128
  const T* q = static_cast<const T*>(p.q);
#pragma unroll 4
  for (int c = tid; c < kBlockM * kChunks; c += Tl::kThreads) {
    const int r = c / kChunks, chunk = c % kChunks, row = info.tile * kBlockM + r;
    const bool valid = row < n_rows;
    flash::cp_async_16(q_smem + wgmma::sw128_chunk_offset(r, chunk, Tl::kQHalf),
                       valid ? q + row_off(p.q_stride, row) + chunk * 8 : q, valid);
  }

  // Page-table entries travel a tile ahead of the copies that use them: s_slots[t % kStages]
  // holds the slots of tile t, and `slot_next` (threads < kBlockN) is in flight for the tile
  // the next refill loads.
  // With a window the walk starts at the tile of the first key the block's first row sees:
  // tiles wholly before every row's window are not read.
  const int window = OPTS ? p.window : 0;
  const int first_tile = OPTS ? window_start(info.first_pos + info.tile * kBlockM / group, window) / kBlockN : 0;
  __shared__ int32_t s_slots[Tl::kStages][kBlockN];
  const int32_t* slots = info.slots;
  auto slot_at = [&](int key) -> int32_t { return key < key_end ? slots[key] : 0; };
  int32_t slot_next = 0;
  if (tid < kBlockN) {
#pragma unroll
    for (int t = 0; t < Tl::kStages; ++t)
      s_slots[(first_tile + t) % Tl::kStages][tid] = slot_at((first_tile + t) * kBlockN + tid);
    slot_next = slot_at((first_tile + Tl::kStages) * kBlockN + tid);
  }
  __syncthreads();
  const int n_kv_tiles = (key_end + kBlockN - 1) / kBlockN;
  // Copies tile t (keys t * kBlockN ...) into ring stage t % kStages (FP8: its codes into the
  // staging tile) and commits one group (empty past the last tile, so every thread's group
  // count stays aligned).
  const KV* k_cache = static_cast<const KV*>(p.k_cache) + int64_t(info.kvh) * D;
  const KV* v_cache = static_cast<const KV*>(p.v_cache) + int64_t(info.kvh) * D;
  const int n_kv_heads = p.n_kv_heads;
  auto stage_addr = [&](int t) { return Tl::kQBytes + (t % kTStages) * 2 * Tl::kKvBytes; };
  unsigned char* code_tile = smem + Tl::kQBytes + kTStages * 2 * Tl::kKvBytes;  // FP8 only: [K|V][kBlockN][D]
  auto load_tile = [&](int t) {
    if (t < n_kv_tiles) {
      const int key0 = t * kBlockN;
      const int32_t* tile_slots = s_slots[t % Tl::kStages];
      if constexpr (kFp8) {
        flash::load_kv_tile_fp8<D, kBlockN>(
            code_tile, code_tile + Tl::kCodeTileBytes, k_cache, v_cache, [&](int row) { return tile_slots[row]; },
            key0, key_end, n_kv_heads, 0, tid, Tl::kThreads);
      } else {
        unsigned char* k_dst = smem + stage_addr(t);
        unsigned char* v_dst = k_dst + Tl::kKvBytes;
#pragma unroll 4
        for (int c = tid; c < kBlockN * kChunks; c += Tl::kThreads) {
          const int row = c / kChunks, chunk = c % kChunks;
          // Keys at or past key_end are zero-filled: their scores are masked, and zero V rows
          // keep 0 * garbage out of the output.
          const bool valid = key0 + row < key_end;
          const int64_t slot = valid ? tile_slots[row] : 0;
          const int64_t src = slot * n_kv_heads * D + chunk * 8;
          const int dst = wgmma::sw128_chunk_offset(row, chunk, Tl::kKvHalf);
          flash::cp_async_16(k_dst + dst, k_cache + src, valid);
          flash::cp_async_16(v_dst + dst, v_cache + src, valid);
        }
      }
    }
    flash::cp_async_commit();
  };
  // FP8: the staged codes of tile t into T stage t % kTStages (SW128), by all threads.
  auto dequant_tile = [&](int t) {
    unsigned char* k_dst = smem + stage_addr(t);
    flash::dequant_kv_tiles<T, D, kBlockN>(
        code_tile, code_tile + Tl::kCodeTileBytes,
        [&](int which, int row, int chunk) { return k_dst + which * Tl::kKvBytes + wgmma::sw128_chunk_offset(row, chunk, Tl::kKvHalf); },
        tid, Tl::kThreads);
  };
  if constexpr (kFp8) {
    // Tiles first and first + 1 dequantised into the two T stages; tile first + 2's codes
    // stay in flight into the staging tile during the first iteration.
#pragma unroll 1
    for (int t = first_tile; t < first_tile + 2; ++t) {
      load_tile(t);  // the first tile's group also holds Q
      flash::cp_async_wait<0>();
      __syncthreads();
      if (t < n_kv_tiles) dequant_tile(t);
      __syncthreads();  // the staging tile is read before the next gather
    }
    load_tile(first_tile + 2);
  } else {
#pragma unroll
    for (int t = 0; t < Tl::kStages; ++t) load_tile(first_tile + t);  // the first tile's group also holds Q
  }

  float o[D / 8][4];  // the warp's 16 rows x D: wgmma accumulator layout
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
#pragma unroll
  for (int d = 0; d < D / 8; ++d) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.f;
  // Soft-capping turns raw scores into cap * tanh(raw * scale / cap), which the softmax then
  // takes with scale 1 (log2 units: log2(e)).
  const bool capped = OPTS && p.softcap > 0.f;
  const float cap_in = capped ? p.scale / p.softcap : 0.f;
  const float scale_log2 = (capped ? 1.f : p.scale) * 1.4426950408889634f;
  const int wg_key_end = info.group_key_end[wg], wg_unmasked_end = info.group_unmasked_end[wg];
  // This thread's rows (h = 0: g, h = 1: g + 8 of its warp's 16) and their positions.
  const int row_lo = info.tile * kBlockM + wg * kWgRows + wg_warp * 16 + (lane >> 2);
  const int pos_lo = info.first_pos + row_lo / group, pos_hi = info.first_pos + (row_lo + 8) / group;
  // A operand of S: the warpgroup's 64 Q rows, K-major.
  const uint64_t q_desc = wgmma::desc_sw128(smem_base + wg * kWgRows * Tl::kLine, 16, 1024);

  float s[kBlockN / 8][4];       // the warp's 16 rows x kBlockN keys of one tile's scores
  uint32_t pa[kBlockN / 16][4];  // P of one tile as the A fragments of O += P V, 16 keys each
  // Issues S = Q K_t^T (8 k-steps), not committed. Warpgroup-uniform callers only.
  auto issue_s = [&](int t) {
    wgmma_prefill::issue_s<T, Tl::kQHalf, Tl::kKvHalf>(s, q_desc, wgmma::desc_sw128(smem_base + stage_addr(t), 16, 1024));
  };
  // Masks tile t's scores (causal: only the steps that cross a row's position) and runs the
  // online softmax on them; returns whether a row max grew (o must then be scaled by alpha
  // once the P V in flight has landed).
  auto softmax_tile = [&](int t, float (&alpha)[2]) {
    const wgmma_prefill::TileMask mask{pos_lo, pos_hi, wg_key_end, wg_unmasked_end, window,
                                       capped, p.softcap, cap_in, scale_log2};
    return wgmma_prefill::softmax_tile(s, m, l, alpha, t, mask, lane);
  };

  // The pipeline (FlashAttention-3's overlap inside a warpgroup): while the tensor cores run
  // P_t V_t, the warpgroup already does the softmax of tile t + 1, whose S was issued just
  // before. So iteration t issues S_{t+1}, then P_t V_t, waits for S_{t+1} only, runs its
  // softmax, and waits for P_t V_t before o is rescaled and P_{t+1} packed. A ring of
  // kStages = 3 K/V stages: tile t's V is read until the end of iteration t, tile t + 1's K
  // during it, and tile t + 2 lands meanwhile; the end of iteration t refills t's stage with
  // tile t + 3. One block barrier per iteration.
  // The wgmmas are issued by every warpgroup on every iteration, also where a warpgroup's
  // rows see none of the tile (its P is then zero, and the tile's finite K/V, zero-filled
  // past key_end, add exactly nothing): wgmma under a branch ptxas cannot prove uniform gets
  // serialised (warning C7520). Only the softmax is skipped.
  // Float cache: tiles 0 and 1 (and Q) have landed for this thread. FP8: they were waited for
  // and dequantised above (tile 2's codes may still be in flight).
  flash::cp_async_wait<Tl::kStages - 2>();
  wgmma::fence_proxy_async();
  __syncthreads();
  issue_s(first_tile);
  wgmma::commit();
  wgmma::wait<0>();
  wgmma::fence_operands(s);
  auto zero_p = [&] {
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) pa[kk][0] = pa[kk][1] = pa[kk][2] = pa[kk][3] = 0u;
  };
  if (first_tile * kBlockN < wg_key_end) {
    float alpha[2];
    softmax_tile(first_tile, alpha);  // o is still zero: no rescale
    flash::pack_p_atoms<T, kBlockN / 8, 1>(flash::one_atom(pa), flash::one_atom(s));
  } else {
    zero_p();
  }
  for (int it = first_tile; it < n_kv_tiles; ++it) {
    // Warpgroup-uniform: a tile at or past the warpgroup's last position is fully masked
    // (keys at or past key_end, zero-filled, lie past it too). Past the last tile, S reads
    // a stage that holds an older tile: computed, never used.
    const bool run_next = it + 1 < n_kv_tiles && (it + 1) * kBlockN < wg_key_end;
    issue_s(it + 1);
    wgmma::commit();
    // B operand of O += P V: V [keys][d], MN-major; LBO = the next 64 columns (half).
    // wgmma_prefill::issue_pv written out: through it, ptxas (CUDA 13.0) gave the OPTS
    // instantiation 255 registers and a 16-byte spill (247, none, this way).
    const uint64_t v_desc = wgmma::desc_sw128(smem_base + stage_addr(it) + Tl::kKvBytes, Tl::kKvHalf, 1024);
    wgmma::fence();
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk)
      wgmma::m64n128k16_rs_tb<T>(o, pa[kk], wgmma::desc_advance(v_desc, kk * 16 * Tl::kLine));
    wgmma::commit();
    wgmma::wait<1>();  // S_{t+1} (the older group) has landed; P_t V_t may still run
    wgmma::fence_operands(s);
    float alpha[2] = {1.f, 1.f};
    bool grew = false;
    if (run_next) grew = softmax_tile(it + 1, alpha);
    wgmma::wait<0>();  // P_t V_t has landed: o is final for tile t, pa free
    wgmma::fence_operands(o);
    wgmma::fence_operands(pa);
    if (run_next) {
      if (grew) flash::rescale_rows<D>(o, alpha);
      flash::pack_p_atoms<T, kBlockN / 8, 1>(flash::one_atom(pa), flash::one_atom(s));
    } else {
      zero_p();
    }
    // Refill: tile it + 2 must have landed before iteration it + 1 issues its S, and tile
    // it's stage (read by both warpgroups' P V, now waited) takes tile it + 3 (FP8: tile it + 2,
    // dequantised from the staging tile, which then takes tile it + 3's codes).
    flash::cp_async_wait<0>();
    if constexpr (!kFp8) wgmma::fence_proxy_async();
    if (tid < kBlockN) {  // tile it's slots were used long ago: the entry takes tile it + 3's
      s_slots[it % Tl::kStages][tid] = slot_next;
      slot_next = slot_at((it + Tl::kStages + 1) * kBlockN + tid);
    }
    __syncthreads();
    if constexpr (kFp8) {
      if (it + 2 < n_kv_tiles) dequant_tile(it + 2);  // block-uniform
      wgmma::fence_proxy_async();
      __syncthreads();
    }
    load_tile(it + Tl::kStages);
  }

  // Normalise and store the valid rows.
  wgmma_prefill::store_rows<T>(o, l, p.v_scale, p, info, row_lo, n_rows, lane);
#else
  // Built without sm_90a: flash_prefill_wgmma_supported is false, the kernel never launched.
  __trap();
#endif
}

template <typename T, typename KV, bool OPTS>
void launch_opts(const AttentionParams& p, cudaStream_t stream) {
  using Tl = WgmmaTiling;
  constexpr size_t smem = Tl::smem_bytes<KV>();
  once_per_device(reinterpret_cast<const void*>(flash_prefill_wgmma_kernel<T, KV, OPTS>), [] {
    SEAM_CUDA_CHECK(cudaFuncSetAttribute(flash_prefill_wgmma_kernel<T, KV, OPTS>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  });
  const int64_t n_blocks = flash::prefill_grid_blocks(p, Tl::kBlockM);
  SEAM_CHECK(n_blocks <= INT_MAX, "flash prefill (wgmma): ", n_blocks, " blocks exceed the grid limit");
  launch_kernel(flash_prefill_wgmma_kernel<T, KV, OPTS>, dim3(unsigned(n_blocks)), Tl::kThreads, smem, stream, p);
  SEAM_CUDA_CHECK_LAUNCH();
}

template <typename T, typename KV>
void launch_typed(const AttentionParams& p, cudaStream_t stream) {
  if (p.window > 0 || p.softcap > 0.f) return launch_opts<T, KV, true>(p, stream);
  launch_opts<T, KV, false>(p, stream);
}

}  // namespace

bool flash_prefill_wgmma_supported(DType dtype, int head_dim) {
#if defined(SEAM_CUDA_SM90A)
  static const bool device_ok = current_device_is_sm90();  // sm_90a code runs on 9.0 only
  return (dtype == DType::bf16 || dtype == DType::f16) && head_dim == WgmmaTiling::kD && device_ok;
#else
  (void)dtype;
  (void)head_dim;
  return false;
#endif
}

void launch_flash_prefill_wgmma(const AttentionParams& p, DType dtype, cudaStream_t stream) {
  if (p.n_prefill_seqs == 0 || p.n_prefill_tokens == 0) return;
  SEAM_CHECK(flash_prefill_wgmma_supported(dtype, p.head_dim), "flash prefill (wgmma): not available for ",
             dtype_name(dtype), " head dim ", p.head_dim, " (needs an sm_90a build, bf16/f16, d 128, a CC 9.0 GPU)");
  // As the mma.sync kernel: the scale is folded into the exponent's FFMA (needs scale > 0).
  SEAM_CHECK(p.scale > 0.f, "flash prefill (wgmma): softmax scale must be positive, got ", p.scale);
  if (dtype == DType::bf16)
    return p.kv_fp8 ? launch_typed<__nv_bfloat16, Fp8>(p, stream) : launch_typed<__nv_bfloat16, __nv_bfloat16>(p, stream);
  return p.kv_fp8 ? launch_typed<__half, Fp8>(p, stream) : launch_typed<__half, __half>(p, stream);
}

}  // namespace seam::cuda
