// Flash attention (FA2 style) for prefill rows, mma.sync bf16/f16 with fp32 softmax.
//
// Rows are packed by GQA group and walked as prefill_block.cuh says. A block = 4 warps x 32
// rows of one (sequence, kv head); K/V tiles of 64 keys are gathered through the page table
// with cp.async into double-buffered, swizzled shared memory.
//
// A warp owns two row atoms of 16 rows (as FlashAttention-2's 128-row blocks): every K/V
// fragment read from shared memory feeds two MMAs; with one atom the kernel was
// shared-memory-bandwidth bound below half the tensor peak. Q sits in shared memory and its
// A fragments are re-read with ldmatrix per k-step instead of held in registers, which
// leaves room for 64-key softmax steps (see PrefillTiling::kSubN). Measured on the H200
// (4,096 causal tokens, 32/8 heads x 128, docs/performance.md): 492 us = 280 TFLOP/s; the
// removed variants took 661 us (one atom) and 551-555 us (two atoms, Q in registers).
//
// An FP8 E4M3 cache (KV = Fp8): the two pipeline stages hold tiles of codes, and after each
// tile lands the block dequantises it into one bf16/f16 K/V tile pair (kv_fp8_tile.cuh) that
// the unchanged MMAs read; the shared memory is the same as a float cache's (two code stages
// take the bytes of one T stage). k_scale rides in p.scale, v_scale multiplies the output.
#include "backend/cuda/attention_prefill.h"

#include <climits>

#include "backend/cuda/attention_prefill_wgmma.h"
#include "backend/cuda/attention_prefill_ws.h"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/diagnostic_switch.h"
#include "backend/cuda/flash_mma.cuh"
#include "backend/cuda/kv_fp8_tile.cuh"
#include "backend/cuda/prefill_block.cuh"

namespace seam::cuda {

namespace {

template <int D, bool OPTS = false>
struct PrefillTiling {
  static constexpr int kWarps = 4;
  static constexpr int kThreads = kWarps * 32;
  // Row atoms of 16 rows a warp. D = 256 takes one: two atoms' o alone (2 x 128 fp32) would
  // fill the 255 registers a thread may have.
  static constexpr int kAtoms = D == 256 ? 1 : 2;
  static constexpr int kWarpRows = 16 * kAtoms;
  static constexpr int kBlockM = kWarps * kWarpRows;  // query rows per block
  // Keys per shared-memory stage. D = 256: 32, so the two K/V stages and Q take 96 KB and two
  // blocks fit an SM (64 keys: 160 KB, one block of 4 warps).
  static constexpr int kBlockN = D == 256 ? 32 : 64;
  // Keys per softmax step (QK^T, softmax, PV on kSubN keys of the stage). Q is not in
  // registers, so beside o (D/2 * 2 fp32) S (kSubN/2 * 2 fp32) covers the whole 64-key stage
  // at D = 128: 16 independent accumulator chains per k-step in QK^T (4 with 16 keys) and a
  // quarter of the serial max/shuffle/rescale phases, whose latency 2 warps per scheduler hide
  // poorly (255 registers, no spill). At D = 64 the 3-block cap of 168 registers spills at
  // 64 keys. Each value is the largest that ptxas -v shows without spills (D = 96 and 256: 32,
  // chosen by the same register budget, o taking 96 and 128 fp32; D = 128 with the window and
  // soft-cap code (OPTS) spilled 60 bytes at 64 keys: 32).
  static constexpr int kSubN = D == 128 && !OPTS ? 64 : 32;
  // Blocks per SM the registers must allow: D = 128 uses 255 registers (2 blocks, 8 warps);
  // D = 64 fits 3 blocks (168 registers); D = 96 and 256 keep 2.
  static constexpr int kMinBlocks = D == 64 ? 3 : 2;
  // [stage][K|V][kBlockN][D] of KV elements, (FP8 only) the dequantised [K|V][kBlockN][D] of T,
  // then the block's Q rows [kBlockM][D] of T.
  template <typename T, typename KV>
  static constexpr size_t stages_bytes() {
    return size_t(2) * 2 * kBlockN * D * sizeof(KV);
  }
  template <typename T, typename KV>
  static constexpr size_t q_offset() {
    return stages_bytes<T, KV>() + (kIsFp8<KV> ? size_t(2) * kBlockN * D * sizeof(T) : 0);
  }
  template <typename T, typename KV>
  static constexpr size_t smem_bytes() {
    return q_offset<T, KV>() + size_t(kBlockM) * D * sizeof(T);
  }
  static_assert(kBlockN % kSubN == 0 && kBlockN <= kThreads, "the slot prefetch gives each key of a stage a thread");
};

// OPTS: the instantiation that honours p.window and p.softcap. Plain causal attention keeps
// its own, whose registers are as before (at D = 128 the options' extra live values made
// ptxas spill at the 255-register cap).
template <typename T, typename KV, int D, bool OPTS>
__global__ void __launch_bounds__(PrefillTiling<D, OPTS>::kThreads, PrefillTiling<D, OPTS>::kMinBlocks)
    flash_prefill_kernel(AttentionParams p) {
  using Tl = PrefillTiling<D, OPTS || kIsFp8<KV>>;  // (launch_opts: the same tiling)
  constexpr int MA = Tl::kAtoms;
  constexpr int kBlockM = Tl::kBlockM, kBlockN = Tl::kBlockN, kSubN = Tl::kSubN, kWarpRows = Tl::kWarpRows;
  pdl_begin();
  extern __shared__ __align__(128) unsigned char smem_raw[];
  KV* stages = reinterpret_cast<KV*>(smem_raw);  // [2][K|V][kBlockN][D]
  constexpr int kTile = kBlockN * D;
  // FP8: the tile pair the MMAs read, dequantised from a stage (a float cache reads the stage).
  T* deq = reinterpret_cast<T*>(smem_raw + Tl::template stages_bytes<T, KV>());
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int group = p.group;

  __shared__ flash::PrefillBlock<Tl::kWarps> info;  // row groups: the warps
  if (tid == 0) flash::locate_prefill_block<kBlockM>(p, info);
  __syncthreads();
  if (info.seq < 0) return;  // block-uniform; the grid is an upper bound on the tiles

  // This thread's rows: atom a, half h is warp row a * 16 + h * 8 + lane / 4.
  auto row_of = [&](int a, int h) {
    return info.tile * kBlockM + warp * kWarpRows + a * 16 + h * 8 + (lane >> 2);
  };
  auto row_off = [&](int64_t stride, int row) { return flash::prefill_row_offset<D>(info, group, stride, row); };
  // The block's Q rows join tile 0's cp.async group (committed below); rows past the end are zero-filled.
  T* q_smem = reinterpret_cast<T*>(smem_raw + Tl::template q_offset<T, KV>());  // [kBlockM][D], swizzled like K/V
  const T* q = static_cast<const T*>(p.q);
  constexpr int kChunks = D / 8;
#pragma unroll 4
  for (int c = tid; c < kBlockM * kChunks; c += Tl::kThreads) {
    const int r = c / kChunks, chunk = c % kChunks, row = info.tile * kBlockM + r;
    const bool valid = row < info.n_rows;
    flash::cp_async_16(q_smem + flash::tile_offset<D>(r, chunk), valid ? q + row_off(p.q_stride, row) + chunk * 8 : q,
                       valid);
  }

  float o[MA][D / 8][4];
  float m[MA][2], l[MA][2];
#pragma unroll
  for (int a = 0; a < MA; ++a) {
#pragma unroll
    for (int d = 0; d < D / 8; ++d) o[a][d][0] = o[a][d][1] = o[a][d][2] = o[a][d][3] = 0.f;
    m[a][0] = m[a][1] = -INFINITY;
    l[a][0] = l[a][1] = 0.f;
  }
  // Soft-capping turns raw scores into cap * tanh(raw * scale / cap), which the softmax then
  // takes with scale 1 (log2 units: log2(e)).
  const bool capped = OPTS && p.softcap > 0.f;
  const float cap_in = capped ? p.scale / p.softcap : 0.f;
  const float scale_log2 = (capped ? 1.f : p.scale) * 1.4426950408889634f;

  // Page-table entries travel a tile ahead of the copies that use them: s_slots[j & 1] holds
  // the slots of tile j, and `slot_next` (threads < kBlockN) is in flight for the tile after.
  // With a window the walk starts at the tile of the first key the block's first row sees:
  // tiles wholly before every row's window are not read.
  const int window = OPTS ? p.window : 0;
  const int first_tile = OPTS ? window_start(info.first_pos + info.tile * kBlockM / group, window) / kBlockN : 0;
  __shared__ int32_t s_slots[2][kBlockN];
  auto slot_at = [&](int key) -> int32_t { return key < info.key_end ? info.slots[key] : 0; };
  int32_t slot_next = 0;
  if (tid < kBlockN) {
    s_slots[first_tile & 1][tid] = slot_at(first_tile * kBlockN + tid);
    s_slots[(first_tile + 1) & 1][tid] = slot_at((first_tile + 1) * kBlockN + tid);
    slot_next = slot_at((first_tile + 2) * kBlockN + tid);
  }
  __syncthreads();
  // Copies tile j (keys j * kBlockN ...) into pipeline stage j & 1.
  auto load_tile = [&](int j) {
    KV* k_dst = stages + (j & 1) * 2 * kTile;
    const int64_t head = int64_t(info.kvh) * D;
    const KV* k_src = static_cast<const KV*>(p.k_cache) + head;
    const KV* v_src = static_cast<const KV*>(p.v_cache) + head;
    const auto slot_of = [&](int row) { return s_slots[j & 1][row]; };
    if constexpr (kIsFp8<KV>)
      flash::load_kv_tile_fp8<D, kBlockN>(k_dst, k_dst + kTile, k_src, v_src, slot_of, j * kBlockN, info.key_end,
                                          p.n_kv_heads, 0, tid, Tl::kThreads);
    else
      flash::load_kv_tile<T, D, kBlockN>(k_dst, k_dst + kTile, k_src, v_src, slot_of, j * kBlockN, info.key_end,
                                         p.n_kv_heads, 0, tid, Tl::kThreads);
  };
  load_tile(first_tile);
  flash::cp_async_commit();
  const int n_kv_tiles = (info.key_end + kBlockN - 1) / kBlockN;
  for (int it = first_tile; it < n_kv_tiles; ++it) {
    const int stage = it & 1;
    if (it + 1 < n_kv_tiles) {
      load_tile(it + 1);
      flash::cp_async_commit();
      flash::cp_async_wait<1>();
    } else {
      flash::cp_async_wait<0>();
    }
    __syncthreads();
    const T* k_tile;
    if constexpr (kIsFp8<KV>) {
      // The previous tile's MMAs ended at the loop's closing barrier: deq is free.
      const KV* staged = stages + stage * 2 * kTile;
      flash::dequant_kv_tiles_swizzled<T, D, kBlockN>(deq, deq + kTile, staged, staged + kTile, tid, Tl::kThreads);
      __syncthreads();
      k_tile = deq;
    } else {
      k_tile = stages + stage * 2 * kTile;
    }
    const T* v_tile = k_tile + kTile;

    // Not unrolled: with the steps unrolled the compiler overlaps them and runs out of
    // registers at D = 128, two atoms.
#pragma unroll 1
    for (int sub = 0; sub < kBlockN / kSubN; ++sub) {
      const int key0 = it * kBlockN + sub * kSubN;
      // Warp-uniform: past the warp's last position every score is masked. Keys at or past
      // key_end (zero-filled) lie past it too.
      if (key0 >= info.group_key_end[warp]) break;
      // Warp-uniform: with a window, a step wholly before the window of the warp's first row
      // is masked for all its rows (group_unmasked_end - 1 is that row's position).
      if (window > 0 && key0 + kSubN <= info.group_unmasked_end[warp] - window) continue;
      float s[MA][kSubN / 8][4];
      // Row offset sub * kSubN is a multiple of 8, so the swizzle pattern is unchanged.
      flash::qk_tile_atoms_qsmem<T, D, kSubN / 8, MA>(s, q_smem + warp * kWarpRows * D, k_tile + sub * kSubN * D, lane);
      if (capped) {
#pragma unroll
        for (int a = 0; a < MA; ++a)
#pragma unroll
          for (int n = 0; n < kSubN / 8; ++n)
#pragma unroll
            for (int e = 0; e < 4; ++e) s[a][n][e] = p.softcap * tanhf(s[a][n][e] * cap_in);
      }
      // Causal mask only on the diagonal steps; the window's lower edge only on the steps that
      // reach below the window of the warp's last row (group_key_end - 1 is its position).
      const bool diagonal = key0 + kSubN > info.group_unmasked_end[warp];
      const bool below = window > 0 && key0 < info.group_key_end[warp] - window;
      if (diagonal || below) {
        const int first_pos = info.first_pos;
#pragma unroll
        for (int a = 0; a < MA; ++a) {
          const int pos0 = first_pos + row_of(a, 0) / group, pos1 = first_pos + row_of(a, 1) / group;
#pragma unroll
          for (int n = 0; n < kSubN / 8; ++n)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int key = key0 + n * 8 + (lane & 3) * 2 + (e & 1);
              const int pos = e < 2 ? pos0 : pos1;
              if (key > pos || (window > 0 && key <= pos - window)) s[a][n][e] = -INFINITY;
            }
        }
      }
      flash::softmax_update_atoms<D, kSubN / 8, MA>(s, o, m, l, scale_log2);
      uint32_t pa[MA][kSubN / 16][4];  // P packed right after the softmax: half the registers during PV
      flash::pack_p_atoms<T, kSubN / 8, MA>(pa, s);
      flash::pv_tile_atoms_packed<T, D, kSubN / 8, MA>(o, pa, v_tile + sub * kSubN * D, lane);
    }
    // Tile it's slots were used by the copies issued last iteration: reuse the entry for tile it+2.
    if (tid < kBlockN) {
      s_slots[stage][tid] = slot_next;
      slot_next = slot_at((it + 3) * kBlockN + tid);
    }
    __syncthreads();  // the next iteration's prefetch overwrites this stage's buffers
  }

  // Normalise and store the valid rows.
  T* out = static_cast<T*>(p.out);
  const int t2 = (lane & 3) * 2;
#pragma unroll
  for (int a = 0; a < MA; ++a) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float sum = l[a][h];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const int row = row_of(a, h);
      if (row >= info.n_rows) continue;
      const float inv = sum > 0.f ? p.v_scale / sum : 0.f;  // v_scale: 1 but for an FP8 cache
      T* dst = out + row_off(p.out_stride, row);
#pragma unroll
      for (int d = 0; d < D / 8; ++d)
        *reinterpret_cast<uint32_t*>(dst + d * 8 + t2) =
            flash::pack2<T>(o[a][d][2 * h] * inv, o[a][d][2 * h + 1] * inv);
    }
  }
}

template <typename T, typename KV, int D, bool OPTS>
void launch_opts(const AttentionParams& p, cudaStream_t stream) {
  // An FP8 cache takes the options' 32-key steps at D = 128: with 64, the dequantisation's live
  // values spilled 72 bytes (ptxas -v). Threads, blocks and shared memory do not depend on it.
  using Tl = PrefillTiling<D, OPTS || kIsFp8<KV>>;
  constexpr size_t smem = Tl::template smem_bytes<T, KV>();
  once_per_device(reinterpret_cast<const void*>(flash_prefill_kernel<T, KV, D, OPTS>), [] {
    SEAM_CUDA_CHECK(cudaFuncSetAttribute(flash_prefill_kernel<T, KV, D, OPTS>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         int(smem)));
  });
  const int64_t n_blocks = flash::prefill_grid_blocks(p, Tl::kBlockM);
  SEAM_CHECK(n_blocks <= INT_MAX, "flash prefill: ", n_blocks, " blocks exceed the grid limit");
  launch_kernel(flash_prefill_kernel<T, KV, D, OPTS>, dim3(unsigned(n_blocks)), Tl::kThreads, smem, stream, p);
  SEAM_CUDA_CHECK_LAUNCH();
}

template <typename T, typename KV, int D>
void launch_typed(const AttentionParams& p, cudaStream_t stream) {
  if (p.window > 0 || p.softcap > 0.f) return launch_opts<T, KV, D, true>(p, stream);
  launch_opts<T, KV, D, false>(p, stream);
}

}  // namespace

bool flash_prefill_supported(DType dtype, int head_dim) {
  return (dtype == DType::bf16 || dtype == DType::f16) &&
         (head_dim == 64 || head_dim == 96 || head_dim == 128 || head_dim == 256);
}

void launch_flash_prefill(const AttentionParams& p, DType dtype, cudaStream_t stream, PrefillKernel kernel) {
  if (p.n_prefill_seqs == 0 || p.n_prefill_tokens == 0) return;
  SEAM_ASSERT(flash_prefill_supported(dtype, p.head_dim));
  // The row max is taken over raw scores and then scaled, and the scale is folded into the
  // exponent's FFMA: both need a positive scale (the max of scaled scores = scaled max).
  SEAM_CHECK(p.scale > 0.f, "flash prefill: softmax scale must be positive, got ", p.scale);
  if (kernel == PrefillKernel::automatic) {
    static const int mode = env_choice("SEAM_PREFILL_WGMMA", 1, {0, 1, 2});  // diagnostic switches
    static const int ws_mode = env_choice("SEAM_PREFILL_WS", 1, {0, 1});
    const int longest = p.max_seq_len > 0 ? p.max_seq_len : p.n_prefill_tokens;
    kernel = choose_prefill_kernel(mode, longest, flash_prefill_wgmma_supported(dtype, p.head_dim), ws_mode,
                                   flash_prefill_ws_supported(dtype, p.head_dim, p.kv_fp8));
  }
  if (kernel == PrefillKernel::wgmma_ws) return launch_flash_prefill_ws(p, dtype, stream);
  if (kernel == PrefillKernel::wgmma) return launch_flash_prefill_wgmma(p, dtype, stream);
  const auto by_dim = [&](auto tag, auto kv_tag) {
    using T = decltype(tag);
    using KV = decltype(kv_tag);
    switch (p.head_dim) {
      case 64: return launch_typed<T, KV, 64>(p, stream);
      case 96: return launch_typed<T, KV, 96>(p, stream);
      case 128: return launch_typed<T, KV, 128>(p, stream);
      default: return launch_typed<T, KV, 256>(p, stream);
    }
  };
  if (dtype == DType::bf16)
    return p.kv_fp8 ? by_dim(__nv_bfloat16{}, Fp8{}) : by_dim(__nv_bfloat16{}, __nv_bfloat16{});
  return p.kv_fp8 ? by_dim(__half{}, Fp8{}) : by_dim(__half{}, __half{});
}

}  // namespace seam::cuda
