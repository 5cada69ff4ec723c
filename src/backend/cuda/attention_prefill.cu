// Flash attention (FA2 style) for prefill rows, mma.sync bf16/f16 with fp32 softmax.
//
// Rows are packed by GQA group: row r of a sequence is (token r / group, head
// kvh * group + r % group), so one block reads each K/V tile once for all the
// query heads that share it. A block = 4 warps x 16 rows = 64 rows of one
// (sequence, kv head); K/V tiles of 64 keys are gathered through the page table
// with cp.async into double-buffered, swizzled shared memory.
#include "backend/cuda/attention_prefill.h"

#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/flash_mma.cuh"

namespace seam::cuda {

namespace {

constexpr int kWarps = 4;
constexpr int kBlockM = 16 * kWarps;  // query rows per block
constexpr int kBlockN = 64;           // keys per tile

template <typename T, int D>
constexpr size_t prefill_smem_bytes() {
  return size_t(2) * 2 * kBlockN * D * sizeof(T);  // [stage][K|V][kBlockN][D]
}

template <typename T, int D>
__global__ void __launch_bounds__(kWarps * 32, 3) flash_prefill_kernel(AttentionParams p) {
  pdl_begin();
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* smem = reinterpret_cast<T*>(smem_raw);
  constexpr int kTile = kBlockN * D;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int group = p.group, kvh = blockIdx.y;

  // Which (sequence, row tile) this block is: walk the prefill sequences. Heavy tiles (late
  // rows, long causal range) get the low block ids, so they start first.
  __shared__ int s_seq, s_tile;
  if (tid == 0) {
    int b = blockIdx.x, seq = -1, tile = 0;
    for (int s = 0; s < p.n_prefill_seqs; ++s) {
      const int n_rows = (p.qo_indptr[s + 1] - p.qo_indptr[s]) * group;
      const int n_tiles = (n_rows + kBlockM - 1) / kBlockM;
      if (b < n_tiles) {
        seq = s;
        tile = n_tiles - 1 - b;
        break;
      }
      b -= n_tiles;
    }
    s_seq = seq;
    s_tile = tile;
  }
  __syncthreads();
  const int seq = s_seq, tile = s_tile;
  if (seq < 0) return;  // the grid is an upper bound on the tiles

  const int q_begin = p.qo_indptr[seq], n_q = p.qo_indptr[seq + 1] - q_begin;
  const int seq_len = p.seq_lens[seq], first_pos = seq_len - n_q;
  const int n_rows = n_q * group;
  const int32_t* slots = p.page_table + int64_t(p.req_rows[seq]) * p.pt_stride;
  const T* q = static_cast<const T*>(p.q);
  T* out = static_cast<T*>(p.out);
  const T* k_cache = static_cast<const T*>(p.k_cache);
  const T* v_cache = static_cast<const T*>(p.v_cache);

  // This thread's two rows (g and g+8 of the warp's 16).
  const int row0 = tile * kBlockM + warp * 16 + (lane >> 2), row1 = row0 + 8;
  auto row_off = [&](int64_t stride, int row) {  // element offset of a row in q / out
    const int tok = q_begin + row / group, head = kvh * group + row % group;
    return int64_t(tok) * stride + int64_t(head) * D;
  };
  uint32_t qf[D / 16][4];
  flash::load_q_fragments<T, D>(qf, row0 < n_rows ? q + row_off(p.q_stride, row0) : nullptr,
                                row1 < n_rows ? q + row_off(p.q_stride, row1) : nullptr, lane);
  const int pos0 = first_pos + row0 / group, pos1 = first_pos + row1 / group;

  // Keys this tile needs: up to the last valid row's position; all keys below the first
  // row's position are visible to every row (no mask needed there).
  const int last_row = min(tile * kBlockM + kBlockM, n_rows) - 1;
  const int key_end = first_pos + last_row / group + 1;
  const int unmasked_end = first_pos + (tile * kBlockM) / group + 1;
  const int n_kv_tiles = (key_end + kBlockN - 1) / kBlockN;

  float o[D / 8][4];
#pragma unroll
  for (int d = 0; d < D / 8; ++d) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  const float scale_log2 = p.scale * 1.4426950408889634f;

  // Page-table entries travel a tile ahead of the copies that use them: s_slots[j & 1] holds
  // the slots of tile j, and `slot_next` (threads < kBlockN) is in flight for the tile after.
  __shared__ int32_t s_slots[2][kBlockN];
  auto slot_at = [&](int key) -> int32_t { return key < key_end ? slots[key] : 0; };
  int32_t slot_next = 0;
  if (tid < kBlockN) {
    s_slots[0][tid] = slot_at(tid);
    s_slots[1][tid] = slot_at(kBlockN + tid);
    slot_next = slot_at(2 * kBlockN + tid);
  }
  __syncthreads();
  flash::load_kv_tile<T, D, kBlockN>(
      smem, smem + kTile, k_cache, v_cache, [&](int row) { return s_slots[0][row]; }, 0, key_end, p.n_kv_heads, kvh,
      tid, kWarps * 32);
  flash::cp_async_commit();
  for (int it = 0; it < n_kv_tiles; ++it) {
    const int stage = it & 1;
    if (it + 1 < n_kv_tiles) {
      T* next = smem + (stage ^ 1) * 2 * kTile;
      const int32_t* next_slots = s_slots[stage ^ 1];
      flash::load_kv_tile<T, D, kBlockN>(
          next, next + kTile, k_cache, v_cache, [&](int row) { return next_slots[row]; }, (it + 1) * kBlockN,
          key_end, p.n_kv_heads, kvh, tid, kWarps * 32);
      flash::cp_async_commit();
      flash::cp_async_wait<1>();
    } else {
      flash::cp_async_wait<0>();
    }
    __syncthreads();
    const T* k_tile = smem + stage * 2 * kTile;
    const T* v_tile = k_tile + kTile;

    float s[kBlockN / 8][4];
    flash::qk_tile<T, D, kBlockN / 8>(s, qf, k_tile, lane);
    const int key0 = it * kBlockN;
    const bool need_mask = key0 + kBlockN > unmasked_end;
#pragma unroll
    for (int n = 0; n < kBlockN / 8; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = key0 + n * 8 + (lane & 3) * 2 + (e & 1);
        const int pos = e < 2 ? pos0 : pos1;
        s[n][e] = need_mask && key > pos ? -INFINITY : s[n][e] * scale_log2;
      }
    }
    flash::softmax_update<D, kBlockN / 8>(s, o, m, l);
    flash::pv_tile<T, D, kBlockN / 8>(o, s, v_tile, lane);
    // Tile it's slots were used by the copies issued last iteration: reuse the entry for tile it+2.
    if (tid < kBlockN) {
      s_slots[stage][tid] = slot_next;
      slot_next = slot_at((it + 3) * kBlockN + tid);
    }
    __syncthreads();  // the next iteration's prefetch overwrites this stage's buffers
  }

  // Normalise and store the valid rows.
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
  }
  const int t2 = (lane & 3) * 2;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = h ? row1 : row0;
    if (row >= n_rows) continue;
    const float inv = l[h] > 0.f ? 1.f / l[h] : 0.f;
    T* dst = out + row_off(p.out_stride, row);
#pragma unroll
    for (int d = 0; d < D / 8; ++d)
      *reinterpret_cast<uint32_t*>(dst + d * 8 + t2) = flash::pack2<T>(o[d][2 * h] * inv, o[d][2 * h + 1] * inv);
  }
}

template <typename T, int D>
void launch_typed(const AttentionParams& p, cudaStream_t stream) {
  constexpr size_t smem = prefill_smem_bytes<T, D>();
  static const bool attr_ok = [] {  // once per instantiation, before any capture (host-side only)
    SEAM_CUDA_CHECK(
        cudaFuncSetAttribute(flash_prefill_kernel<T, D>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    return true;
  }();
  (void)attr_ok;
  const int64_t n_blocks = (int64_t(p.n_prefill_tokens) * p.group + kBlockM - 1) / kBlockM + p.n_prefill_seqs;
  const dim3 grid(unsigned(n_blocks), unsigned(p.n_kv_heads));
  launch_kernel(flash_prefill_kernel<T, D>, grid, kWarps * 32, smem, stream, p);
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace

bool flash_prefill_supported(DType dtype, int head_dim) {
  return (dtype == DType::bf16 || dtype == DType::f16) && (head_dim == 64 || head_dim == 128);
}

void launch_flash_prefill(const AttentionParams& p, DType dtype, cudaStream_t stream) {
  if (p.n_prefill_seqs == 0 || p.n_prefill_tokens == 0) return;
  SEAM_ASSERT(flash_prefill_supported(dtype, p.head_dim));
  if (dtype == DType::bf16) {
    if (p.head_dim == 64) return launch_typed<__nv_bfloat16, 64>(p, stream);
    return launch_typed<__nv_bfloat16, 128>(p, stream);
  }
  if (p.head_dim == 64) return launch_typed<__half, 64>(p, stream);
  return launch_typed<__half, 128>(p, stream);
}

}  // namespace seam::cuda
