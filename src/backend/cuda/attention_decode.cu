// Flash-decoding: grid (split, kv head, decode sequence), 4 warps per block, or 2 where
// decode_block_warps.h's rule (SEAM_DECODE_BLOCK_WARPS) makes one wave of two that way.
//
// Within a block the warps take 16-key tiles of the split's range in turn, each
// with its own 3-stage cp.async ring (warp-local: no block barrier in the loop).
// A warp's 16 MMA rows are the `group` query heads that share the KV head (rows
// past the group are zero), so each K/V byte is read once for the whole group.
// The 4 warps' partial softmax states are merged through shared memory; with
// one split the block writes the output, else an fp32 partial (unnormalised
// sum, max, denominator), merged by combine_kernel. With SEAM_DECODE_FUSED_COMBINE=1 the last
// split of a (sequence, kv head) to finish merges the partials itself (merge_splits) and no
// combine kernel is launched (measured slower, so off by default: see fused_combine_enabled).
//
// With programmatic dependent launch the block starts while the qkv kernel before it
// still runs: the page-table reads and the K/V copies of older keys go out before
// griddepcontrol.wait, and only q and the tile holding the newest key wait for it.
//
// An FP8 E4M3 cache (KV = Fp8): the ring holds tiles of codes (half the bytes a key), and each
// warp dequantises its current tile into its own bf16/f16 K/V tile pair (kv_fp8_tile.cuh)
// before the same MMAs; k_scale rides in p.scale, v_scale multiplies the output. With
// SEAM_DECODE_FP8_REGS=1 (kRegs; head dims 64, 128, 256) the ring's tiles are swizzled and the
// MMAs take their K / V fragments from the codes in registers instead (kv_fp8_frag.cuh): no
// dequantised tiles, half the shared memory.
#include "backend/cuda/attention_decode.h"

#include <type_traits>

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/decode_block_warps.h"
#include "backend/cuda/diagnostic_switch.h"
#include "backend/cuda/flash_mma.cuh"
#include "backend/cuda/kv_fp8_frag.cuh"
#include "backend/cuda/kv_fp8_tile.cuh"
#include "core/error.h"

namespace seam::cuda {

namespace {

constexpr int kWarps = kDecodeWarpsWide;  // the most warps a block has (the merge's layout is sized for it)
static_assert(kDecodeWarpsNarrow <= kWarps);
constexpr int kTileKeys = 16;  // keys per warp tile
constexpr int kStages = 3;     // cp.async ring depth per warp
constexpr int kMaxSplits = 64;
// Fewest keys a split is given by default (one tile per warp of a 4-warp block, two of a
// 2-warp one; the batch-1 shapes it was measured on take 4 warps). The split count is baked
// into a graph for the longest context it may meet; a shorter context uses only
// active_splits() of them, so short contexts skip the empty splits and, with one active
// split, the combine pass. At batch 1 a short context is latency-bound, and more splits
// shorten each block's chain of tiles: measured on the H200 (kernel bench, 8B heads, ctx
// 160) 5.9 us at 64 keys against 6.6 at 128 and 8.3 at 256 (one split, no combine).
// SEAM_DECODE_MIN_SPLIT_KEYS overrides it (a diagnostic switch).
constexpr int kDefaultMinSplitKeys = kWarps * kTileKeys;

int min_split_keys() {
  static const int keys = env_int("SEAM_DECODE_MIN_SPLIT_KEYS", kDefaultMinSplitKeys, kTileKeys, 1 << 20);
  return keys;
}

// Splits that hold keys for a range of n_keys keys, out of n_splits launched.
__device__ __forceinline__ int active_splits(int n_keys, int n_splits, int min_keys) {
  return max(1, min(n_splits, (n_keys + min_keys - 1) / min_keys));
}

// SEAM_DECODE_FUSED_COMBINE=1 merges the splits in the last split's block instead of a combine
// kernel. Off by default: measured slower on the H200 (2026-12-02, bench-one-batch batch 1,
// context 128-192): gemma-3-4b 2.84-2.85 ms fused vs 2.77 ms with the combine kernel, Phi-3.5-mini
// 2.50 vs 2.32 ms — the last block's serial merge (group x splits partials read back) costs more
// than the launch it saves (PDL already overlaps the combine's launch with the splits' tail).
bool fused_combine_enabled() {
  static const bool on = env_choice("SEAM_DECODE_FUSED_COMBINE", 0, {0, 1}) == 1;
  return on;
}

// The keys the decode row of a sequence of seq_len keys sees: [first, seq_len), its window
// (all keys without one). The splits cut this range: keys before it are never read.
__device__ __forceinline__ int decode_first_key(int seq_len, int window) { return window_start(seq_len - 1, window); }

// SEAM_DECODE_FP8_REGS=1: an FP8 cache's K / V fragments decoded in registers (kRegs). Built
// 2026-12-05 without a device: off until measured (docs/performance.md, twenty-ninth pass).
bool fp8_regs_enabled() {
  static const bool on = env_choice("SEAM_DECODE_FP8_REGS", 0, {0, 1}) == 1;
  return on;
}
template <int D>
constexpr bool kFp8RegsDim = D == 64 || D % 128 == 0;  // code_tile_offset's head dims

// Bytes of a block of `warps` warps' cp.async rings (KV elements), then (FP8, not kRegs) of their
// dequantised T tile pairs; the warps' merge reuses the memory afterwards ((m, l) laid out for
// kWarps warps, then each warp's 16 rows of o).
template <typename T, typename KV, int D>
__host__ __device__ constexpr size_t decode_ring_bytes(int warps) {
  return size_t(warps) * kStages * 2 * kTileKeys * D * sizeof(KV);
}
template <typename T, typename KV, int D, bool kRegs = false>
constexpr size_t decode_smem_bytes(int warps) {
  const size_t tiles = kIsFp8<KV> && !kRegs ? size_t(warps) * 2 * kTileKeys * D * sizeof(T) : 0;
  const size_t merge = (size_t(kWarps) * 2 * 16 + size_t(warps) * 16 * D) * sizeof(float);
  return decode_ring_bytes<T, KV, D>(warps) + tiles > merge ? decode_ring_bytes<T, KV, D>(warps) + tiles : merge;
}

// The last split block of (dseq, kvh) merges the n_active splits' partials of the group's query
// heads, as combine_kernel does: out = sum_i o_i 2^(m_i - M) / sum_i l_i 2^(m_i - M). `smem` is
// the block's shared memory, free again (>= 2 * group * kMaxSplits floats). Partials are read
// with ld.global.cg: other SMs wrote them, and L1 is not coherent.
template <typename T, int D>
__device__ void merge_splits(const AttentionParams& p, int n_splits, int n_active, int dseq, int kvh, int token,
                             const float* part_o, const float* part_ml, float* smem) {
  const int group = p.group;
  float* ms = smem;                       // [group][kMaxSplits]: m_i, then the weight 2^(m_i - M) / L
  float* ls = smem + group * kMaxSplits;  // [group][kMaxSplits]: l_i
  const int64_t base = (int64_t(dseq) * p.n_heads + int64_t(kvh) * group) * n_splits;  // part of (row 0, split 0)
  for (int it = threadIdx.x; it < group * n_active; it += blockDim.x) {
    const int row = it / n_active, split = it % n_active;
    const int64_t part = base + int64_t(row) * n_splits + split;
    ms[row * kMaxSplits + split] = __ldcg(part_ml + part * 2);
    ls[row * kMaxSplits + split] = __ldcg(part_ml + part * 2 + 1);
  }
  __syncthreads();
  if (threadIdx.x < group) {  // one thread per query head: its splits' weights, in split order
    float* m_row = ms + threadIdx.x * kMaxSplits;
    const float* l_row = ls + threadIdx.x * kMaxSplits;
    float mx = -INFINITY;
    for (int i = 0; i < n_active; ++i) mx = fmaxf(mx, m_row[i]);
    const float m_use = mx == -INFINITY ? 0.f : mx;
    float sum_l = 0.f;
    for (int i = 0; i < n_active; ++i) {
      m_row[i] = exp2f(m_row[i] - m_use);
      sum_l += l_row[i] * m_row[i];
    }
    const float inv = sum_l > 0.f ? 1.f / sum_l : 0.f;
    for (int i = 0; i < n_active; ++i) m_row[i] *= inv;
  }
  __syncthreads();
  for (int it = threadIdx.x; it < group * D; it += blockDim.x) {
    const int row = it / D, d = it % D;
    const float* po = part_o + (base + int64_t(row) * n_splits) * D + d;
    const float* w = ms + row * kMaxSplits;
    float acc = 0.f;
  // Independent loads in flight, as combine_kernel; the factor per head size keeps the kernel's
  // registers (nvcc 13.0, sm_90a) at or below those it had without the merge (D 96: 126 at 1, 162 at
  // 2-4, 128 before; D 64: 96 at 2-4, 107 at 1), so as many blocks stay resident.
#pragma unroll(D == 96 ? 1 : 4)
    for (int i = 0; i < n_active; ++i) acc += __ldcg(po + int64_t(i) * D) * w[i];
    T* dst = static_cast<T*>(p.out) + int64_t(token) * p.out_stride + int64_t(kvh * group + row) * D;
    dst[d] = from_float<T>(acc);
  }
}

// counters: [n_dec * n_kv_heads] arrival counts, zero between launches (the last arrival resets
// its own), or null: combine_kernel merges.
template <typename T, typename KV, int D, bool kRegs>
__global__ void __launch_bounds__(kWarps * 32) flash_decode_kernel(AttentionParams p, int n_splits, int min_keys,
                                                                   float* part_o, float* part_ml, int* counters) {
  static_assert(!kRegs || (kIsFp8<KV> && kFp8RegsDim<D>), "the register path reads FP8 codes of head dim 64/128/256");
  // Until pdl_begin() the block reads only what the kernel before its predecessor had
  // finished: the step's inputs (uploaded before the step) and the KV of earlier tokens.
  // Only the newest key (seq_len - 1, stored by the predecessor) and q wait for it.
  extern __shared__ __align__(128) unsigned char smem_raw[];
  constexpr int kTile = kTileKeys * D;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int n_warps = int(blockDim.x) >> 5;  // kWarps or kDecodeWarpsNarrow (launch_typed)
  const int split = blockIdx.x, kvh = blockIdx.y, dseq = blockIdx.z;
  const int seq = p.n_prefill_seqs + dseq;
  const int group = p.group;
  const int token = p.qo_indptr[seq];
  const int seq_len = p.seq_lens[seq];
  const int32_t* slots = p.page_table + int64_t(p.req_rows[seq]) * p.pt_stride;
  const KV* k_cache = static_cast<const KV*>(p.k_cache);
  const KV* v_cache = static_cast<const KV*>(p.v_cache);

  const int first_key = decode_first_key(seq_len, p.window), n_keys = seq_len - first_key;
  const int n_active = active_splits(n_keys, n_splits, min_keys);
  // Block-uniform, and split 0 always waits, so the grid still completes after its predecessor.
  if (split >= n_active) return;
  // This split's keys: equal chunks of the window rounded to whole tiles.
  const int chunk = ((n_keys + n_active - 1) / n_active + kTileKeys - 1) / kTileKeys * kTileKeys;
  const int k_begin = first_key + split * chunk, k_end = min(seq_len, k_begin + chunk);
  const int n_tiles = k_end > k_begin ? (k_end - k_begin + kTileKeys - 1) / kTileKeys : 0;

  const int r_lo = lane >> 2, r_hi = r_lo + 8;
  float o[D / 8][4];
#pragma unroll
  for (int d = 0; d < D / 8; ++d) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  const float scale_log2 = p.scale * 1.4426950408889634f;
  // Soft-capping: score = cap * tanh(raw * scale / cap), then to log2 units.
  const float cap = p.softcap, cap_in = p.softcap > 0.f ? p.scale / p.softcap : 0.f;
  const float cap_out = p.softcap * 1.4426950408889634f;

  KV* ring = reinterpret_cast<KV*>(smem_raw) + size_t(warp) * kStages * 2 * kTile;
  // FP8: the warp's dequantised K and V tiles (unused, and not allocated, for a float cache).
  T* deq = reinterpret_cast<T*>(smem_raw + decode_ring_bytes<T, KV, D>(n_warps)) + size_t(warp) * 2 * kTile;
  // Warp w handles tiles w, w + n_warps, ...: its i-th tile is tile w + n_warps * i.
  const int my_tiles = n_tiles > warp ? (n_tiles - warp + n_warps - 1) / n_warps : 0;
  // Page-table entries travel a tile ahead: lane l (< 16) holds in `slot_next` the slot of key l
  // of the next tile to issue, and the copies take it by shuffle.
  auto fetch_slot = [&](int i) -> int32_t {
    const int key = k_begin + (warp + n_warps * i) * kTileKeys + (lane & 15);
    return i < my_tiles && key < k_end ? slots[key] : 0;
  };
  int32_t slot_next = fetch_slot(0);
  auto issue = [&](int i) {
    if (i < my_tiles) {
      KV* kt = ring + (i % kStages) * 2 * kTile;
      const int32_t held = slot_next;
      const auto slot_of = [&](int row) { return __shfl_sync(0xffffffffu, held, row); };
      const int key0 = k_begin + (warp + n_warps * i) * kTileKeys;
      if constexpr (kIsFp8<KV>)
        flash::load_kv_tile_fp8<D, kTileKeys, kRegs>(kt, kt + kTile, k_cache, v_cache, slot_of, key0, k_end,
                                                     p.n_kv_heads, kvh, lane, 32);
      else
        flash::load_kv_tile<T, D, kTileKeys>(kt, kt + kTile, k_cache, v_cache, slot_of, key0, k_end, p.n_kv_heads,
                                             kvh, lane, 32);
    }
    flash::cp_async_commit();  // always commit (maybe empty) so the group count stays aligned
    slot_next = fetch_slot(i + 1);
  };
  // The ring's first tiles go out before the wait unless they hold the newest key; the
  // issue order (one commit group per tile) is the same either way.
  int n_issued = 0;
  while (n_issued < kStages - 1 &&
         (n_issued >= my_tiles || k_begin + (warp + n_warps * n_issued + 1) * kTileKeys < seq_len))
    issue(n_issued++);
  pdl_begin();
  while (n_issued < kStages - 1) issue(n_issued++);

  const T* q = static_cast<const T*>(p.q) + int64_t(token) * p.q_stride + int64_t(kvh) * group * D;
  uint32_t qf[D / 16][4];
  if constexpr (kRegs)
    flash::load_q_fragments_fp8_regs<T, D>(qf, r_lo < group ? q + r_lo * D : nullptr,
                                           r_hi < group ? q + r_hi * D : nullptr, lane);
  else
    flash::load_q_fragments<T, D>(qf, r_lo < group ? q + r_lo * D : nullptr, r_hi < group ? q + r_hi * D : nullptr,
                                  lane);
  for (int i = 0; i < my_tiles; ++i) {
    issue(i + kStages - 1);
    flash::cp_async_wait<kStages - 1>();
    __syncwarp();
    const T* k_tile = nullptr;
    const KV* staged = ring + (i % kStages) * 2 * kTile;
    float s[kTileKeys / 8][4];
    if constexpr (kRegs) {
      flash::qk_tile_fp8_regs<T, D>(s, qf, staged, lane);
    } else {
      if constexpr (kIsFp8<KV>) {
        flash::dequant_kv_tiles_swizzled<T, D, kTileKeys>(deq, deq + kTile, staged, staged + kTile, lane, 32);
        __syncwarp();
        k_tile = deq;
      } else {
        k_tile = staged;
      }
      flash::qk_tile<T, D, kTileKeys / 8>(s, qf, k_tile, lane);
    }
    const int key0 = k_begin + (warp + n_warps * i) * kTileKeys;
#pragma unroll
    for (int n = 0; n < kTileKeys / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = key0 + n * 8 + (lane & 3) * 2 + (e & 1);
        const float x = cap > 0.f ? cap_out * tanhf(s[n][e] * cap_in) : s[n][e] * scale_log2;
        s[n][e] = key < k_end ? x : -INFINITY;
      }
    flash::softmax_update<D, kTileKeys / 8>(s, o, m, l);
    if constexpr (kRegs) {
      uint32_t pa[1][kTileKeys / 16][4];
      flash::pack_p_atoms<T, kTileKeys / 8, 1>(pa, flash::one_atom(s));
      flash::pv_tile_fp8_regs<T, D>(o, pa[0][0], staged + kTile, lane);
    } else {
      flash::pv_tile<T, D, kTileKeys / 8>(o, s, k_tile + kTile, lane);
    }
    __syncwarp();  // the ring slot is refilled kStages - 1 tiles later (and deq rewritten next tile)
  }
  flash::cp_async_wait<0>();
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
  }

  // Merge the block's warps: each writes its rows' (m, l) and o to shared memory.
  __syncthreads();
  float* ms = reinterpret_cast<float*>(smem_raw);   // [kWarps][16]
  float* ls = ms + kWarps * 16;                     // [kWarps][16]
  float* os = ls + kWarps * 16;                     // [n_warps][16][D]
  const int t2 = (lane & 3) * 2;
  if ((lane & 3) == 0) {
    ms[warp * 16 + r_lo] = m[0];
    ms[warp * 16 + r_hi] = m[1];
    ls[warp * 16 + r_lo] = l[0];
    ls[warp * 16 + r_hi] = l[1];
  }
#pragma unroll
  for (int d = 0; d < D / 8; ++d) {
    float* lo = os + (warp * 16 + r_lo) * D;
    float* hi = os + (warp * 16 + r_hi) * D;
    if constexpr (kRegs) {  // the register path's permuted dims (kv_fp8_frag.cuh)
      const int d0 = flash::fp8_regs_dim(d, 0, lane), d1 = flash::fp8_regs_dim(d, 1, lane);
      lo[d0] = o[d][0];
      lo[d1] = o[d][1];
      hi[d0] = o[d][2];
      hi[d1] = o[d][3];
    } else {
      lo[d * 8 + t2] = o[d][0];
      lo[d * 8 + t2 + 1] = o[d][1];
      hi[d * 8 + t2] = o[d][2];
      hi[d * 8 + t2 + 1] = o[d][3];
    }
  }
  __syncthreads();
  for (int it = threadIdx.x; it < group * D; it += blockDim.x) {
    const int row = it / D, d = it % D;
    float mx = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w)
      if (w < n_warps) mx = fmaxf(mx, ms[w * 16 + row]);
    const float m_use = mx == -INFINITY ? 0.f : mx;
    float sum_l = 0.f, sum_o = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      if (w >= n_warps) break;
      const float f = exp2f(ms[w * 16 + row] - m_use);
      sum_l += ls[w * 16 + row] * f;
      sum_o += os[(w * 16 + row) * D + d] * f;
    }
    const int head = kvh * group + row;
    if (n_active == 1) {
      T* dst = static_cast<T*>(p.out) + int64_t(token) * p.out_stride + int64_t(head) * D;
      dst[d] = from_float<T>(sum_l > 0.f ? sum_o / sum_l * p.v_scale : 0.f);
    } else {
      const int64_t part = (int64_t(dseq) * p.n_heads + head) * n_splits + split;
      part_o[part * D + d] = sum_o;
      if (d == 0) {
        part_ml[part * 2] = mx;
        part_ml[part * 2 + 1] = sum_l;
      }
    }
  }
  if (n_active == 1 || counters == nullptr) return;
  // Arrival: every thread's partials are made visible device-wide before thread 0 takes a
  // ticket (threadfence reduction); the split that arrives last merges, after a fence of its own
  // so its reads follow the others' writes, and resets the counter for the next launch (a graph
  // replays this kernel with the same counters: they must be zero whenever none runs).
  __shared__ int arrived_last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    int* counter = counters + int64_t(dseq) * p.n_kv_heads + kvh;
    const int ticket = atomicAdd(counter, 1);
    arrived_last = ticket == n_active - 1;
    if (arrived_last) atomicExch(counter, 0);
  }
  __syncthreads();
  if (!arrived_last) return;  // block-uniform
  __threadfence();
  merge_splits<T, D>(p, n_splits, n_active, dseq, kvh, token, part_o, part_ml, reinterpret_cast<float*>(smem_raw));
}

// Merges the splits of one (decode sequence, head): out = sum_i o_i 2^(m_i - M) / sum_i l_i 2^(m_i - M).
// The block first turns the splits' (m, l) into weights in shared memory (one split per
// thread), then every thread sums one output dimension over the splits with independent
// loads in flight: no serial chain of loads per split.
template <typename T>
__global__ void combine_kernel(AttentionParams p, int n_splits, int min_keys, const float* part_o,
                               const float* part_ml) {
  __shared__ float weight[kMaxSplits];  // 2^(m_i - M) / L per split
  __shared__ float scratch[32];
  const int dseq = blockIdx.x / p.n_heads, head = blockIdx.x % p.n_heads;
  const int D = p.head_dim;
  const int64_t base = (int64_t(dseq) * p.n_heads + head) * n_splits;
  const int seq_len = p.seq_lens[p.n_prefill_seqs + dseq];
  const int n_active = active_splits(seq_len - decode_first_key(seq_len, p.window), n_splits, min_keys);
  const int token = p.qo_indptr[p.n_prefill_seqs + dseq];
  pdl_begin();
  if (n_active == 1) return;  // the single split wrote the output itself (block-uniform)
  // blockDim.x == D >= kMaxSplits: thread i owns split i. The first kEarly splits' o go
  // out with the (m, l) loads, so short contexts wait for one round of loads, not two.
  constexpr int kEarly = 4;
  const int i = threadIdx.x;
  const float* po = part_o + base * D + threadIdx.x;
  float early[kEarly];
#pragma unroll
  for (int s = 0; s < kEarly; ++s) early[s] = s < n_active ? po[int64_t(s) * D] : 0.f;
  const float m_i = i < n_active ? part_ml[(base + i) * 2] : -INFINITY;
  const float l_i = i < n_active ? part_ml[(base + i) * 2 + 1] : 0.f;
  const float mx = block_max(m_i, scratch);
  const float m_use = mx == -INFINITY ? 0.f : mx;
  const float w_i = i < n_active ? exp2f(m_i - m_use) : 0.f;
  const float sum_l = block_sum(l_i * w_i, scratch);
  const float inv = sum_l > 0.f ? 1.f / sum_l : 0.f;
  if (i < kMaxSplits) weight[i] = w_i * inv * p.v_scale;  // v_scale: 1 but for an FP8 cache
  __syncthreads();
  T* dst = static_cast<T*>(p.out) + int64_t(token) * p.out_stride + int64_t(head) * D;
  float acc = 0.f;
#pragma unroll
  for (int s = 0; s < kEarly; ++s) acc += s < n_active ? early[s] * weight[s] : 0.f;
#pragma unroll 8
  for (int s = kEarly; s < n_active; ++s) acc += po[int64_t(s) * D] * weight[s];
  dst[threadIdx.x] = from_float<T>(acc);
}

// SEAM_DECODE_BLOCK_WARPS: 0 (decode_block_warps.h's rule, the default), 2 or 4 (always that many).
int block_warps_mode() {
  static const int mode = env_choice("SEAM_DECODE_BLOCK_WARPS", 0, {0, kDecodeWarpsNarrow, kWarps});
  return mode;
}

// One instantiation's shared memory and resident blocks an SM in each layout (the occupancy queried
// once per instantiation: one GPU model a process), and the layout a batch takes.
template <typename T, typename KV, int D, bool kRegs>
struct DecodeLayouts {
  static constexpr size_t smem_wide = decode_smem_bytes<T, KV, D, kRegs>(kWarps);
  static constexpr size_t smem_narrow = decode_smem_bytes<T, KV, D, kRegs>(kDecodeWarpsNarrow);
  static_assert(smem_wide >= smem_narrow);
  static constexpr auto kernel = flash_decode_kernel<T, KV, D, kRegs>;

  // The kernel's shared-memory limit raised on the current device (each launch checks; set once a device).
  static void allow_smem() {
    once_per_device(reinterpret_cast<const void*>(kernel), [] {
      SEAM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem_wide)));
    });
  }
  struct PerSm {
    int wide = 1, narrow = 1;
    int of(int warps) const { return warps == kDecodeWarpsNarrow ? narrow : wide; }
  };
  static const PerSm& per_sm() {
    static const PerSm v = [] {
      allow_smem();  // the occupancy of smem_wide needs the raised limit
      return PerSm{occupancy(kWarps, smem_wide), occupancy(kDecodeWarpsNarrow, smem_narrow)};
    }();
    return v;
  }
  // Host sizes only (decode rows, kv heads, SMs), so a graph's layout is the one its capture chose.
  static int warps_for(int64_t n_dec, int n_kv_heads, int n_sms) {
    const PerSm& c = per_sm();
    return choose_decode_block_warps(block_warps_mode(), n_dec * n_kv_heads, int64_t(c.wide) * n_sms,
                                     int64_t(c.narrow) * n_sms);
  }

 private:
  static int occupancy(int warps, size_t smem) {
    int n = 0;
    SEAM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, warps * 32, smem));
    return std::max(n, 1);
  }
};

template <typename T, typename KV, int D, bool kRegs>
void launch_typed(const AttentionParams& p, float* scratch, size_t scratch_bytes, int* counters, int n_counters,
                  int n_sms, cudaStream_t stream) {
  using L = DecodeLayouts<T, KV, D, kRegs>;
  L::allow_smem();
  const int n_dec = p.n_seqs - p.n_prefill_seqs;
  const int warps = L::warps_for(n_dec, p.n_kv_heads, n_sms);
  const size_t smem = warps == kDecodeWarpsNarrow ? L::smem_narrow : L::smem_wide;
  const int n_splits = flash_decode_splits(p, scratch_bytes, n_sms, L::per_sm().of(warps));
  const int64_t n_parts = int64_t(n_dec) * p.n_heads * n_splits;
  float* part_o = scratch;                    // [n_dec, n_heads, n_splits, D]
  float* part_ml = scratch + n_parts * D;     // [n_dec, n_heads, n_splits, 2]
  const dim3 grid(unsigned(n_splits), unsigned(p.n_kv_heads), unsigned(n_dec));
  const int min_keys = min_split_keys();
  // The last split merges where every (sequence, kv head) has an arrival counter.
  const bool fused = n_splits > 1 && counters != nullptr && int64_t(n_dec) * p.n_kv_heads <= n_counters &&
                     fused_combine_enabled();
  static_assert(L::smem_narrow >= 2 * 16 * kMaxSplits * sizeof(float),
                "merge_splits keeps 2 floats per (query head, split) of a group of up to 16 in shared memory");
  launch_kernel(L::kernel, grid, unsigned(warps * 32), smem, stream, p, n_splits, min_keys, part_o, part_ml,
                fused ? counters : nullptr);
  SEAM_CUDA_CHECK_LAUNCH();
  if (n_splits > 1 && !fused) {
    static_assert(kMaxSplits <= 64 && D >= kMaxSplits && D % 32 == 0,
                  "combine_kernel gives each split one thread of a head_dim-wide block of whole warps");
    launch_kernel(combine_kernel<T>, unsigned(n_dec * p.n_heads), D, 0, stream, p, n_splits, min_keys, part_o,
                  part_ml);
    SEAM_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace

bool flash_decode_supported(DType dtype, int head_dim, int group) {
  return (dtype == DType::bf16 || dtype == DType::f16) &&
         (head_dim == 64 || head_dim == 96 || head_dim == 128 || head_dim == 256) && group >= 1 && group <= 16;
}

int flash_decode_splits(const AttentionParams& p, size_t scratch_bytes, int n_sms, int blocks_per_sm) {
  const int64_t n_dec = p.n_seqs - p.n_prefill_seqs;
  if (n_dec <= 0) return 1;
  // One full wave of resident blocks: a block's work is one split of one (sequence, kv head),
  // so with equal lengths every block finishes together. Already a wave without splitting: 1.
  // (Four waves were tried: 13-15 % slower at 8 and 64 rows of 2k-32k keys, docs/performance.md.)
  const int64_t capacity = int64_t(blocks_per_sm) * n_sms, base = n_dec * p.n_kv_heads;
  int64_t splits = std::max<int64_t>(1, capacity / base);
  splits = std::min<int64_t>(splits, kMaxSplits);
  // With a known bound on the keys a row reads (eager: the context; any: the window), no split
  // is left without keys.
  int longest = p.max_seq_len;
  if (p.window > 0 && (longest <= 0 || longest > p.window)) longest = p.window;
  if (longest > 0)
    splits = std::min<int64_t>(splits, std::max(1, (longest + min_split_keys() - 1) / min_split_keys()));
  // The partials must fit the scratch.
  const int64_t per_split = n_dec * p.n_heads * (p.head_dim + 2) * int64_t(sizeof(float));
  splits = std::min<int64_t>(splits, std::max<int64_t>(1, int64_t(scratch_bytes) / per_split));
  return int(splits);
}

namespace {

// Calls f(T{}, KV{}, integral_constant<int, D>, bool_constant<kRegs>) for the instantiation that runs
// this dtype, cache and head dim (an FP8 cache's register path where switched on and the head dim has
// it: kFp8RegsDim).
template <typename F>
decltype(auto) with_instantiation(DType dtype, bool kv_fp8, int head_dim, F&& f) {
  const auto by_dim = [&](auto tag, auto kv_tag) -> decltype(auto) {
    using T = decltype(tag);
    using KV = decltype(kv_tag);
    const bool regs = kIsFp8<KV> && fp8_regs_enabled();
    const auto go = [&](auto d_tag) -> decltype(auto) {
      constexpr int D = decltype(d_tag)::value;
      if constexpr (kIsFp8<KV> && kFp8RegsDim<D>)
        if (regs) return f(T{}, KV{}, d_tag, std::true_type{});
      return f(T{}, KV{}, d_tag, std::false_type{});
    };
    switch (head_dim) {
      case 64: return go(std::integral_constant<int, 64>{});
      case 96: return go(std::integral_constant<int, 96>{});
      case 128: return go(std::integral_constant<int, 128>{});
      default: return go(std::integral_constant<int, 256>{});
    }
  };
  if (dtype == DType::bf16)
    return kv_fp8 ? by_dim(__nv_bfloat16{}, Fp8{}) : by_dim(__nv_bfloat16{}, __nv_bfloat16{});
  return kv_fp8 ? by_dim(__half{}, Fp8{}) : by_dim(__half{}, __half{});
}

}  // namespace

void launch_flash_decode(const AttentionParams& p, DType dtype, float* scratch, size_t scratch_bytes, int* counters,
                         int n_counters, int n_sms, cudaStream_t stream) {
  if (p.n_seqs - p.n_prefill_seqs <= 0) return;
  SEAM_ASSERT(flash_decode_supported(dtype, p.head_dim, p.group));
  with_instantiation(dtype, p.kv_fp8, p.head_dim, [&](auto t, auto kv, auto d, auto regs) {
    launch_typed<decltype(t), decltype(kv), decltype(d)::value, decltype(regs)::value>(
        p, scratch, scratch_bytes, counters, n_counters, n_sms, stream);
  });
}

int flash_decode_block_warps(DType dtype, int head_dim, bool kv_fp8, int64_t n_decode_rows, int n_kv_heads,
                             int n_sms) {
  SEAM_CHECK(flash_decode_supported(dtype, head_dim, 1), "flash decode: no kernel for ", dtype_name(dtype),
             " at head dim ", head_dim);
  return with_instantiation(dtype, kv_fp8, head_dim, [&](auto t, auto kv, auto d, auto regs) {
    return DecodeLayouts<decltype(t), decltype(kv), decltype(d)::value, decltype(regs)::value>::warps_for(
        n_decode_rows, n_kv_heads, n_sms);
  });
}

}  // namespace seam::cuda
