// Which packed rows a prefill-attention block computes: the block walk shared by the
// mma.sync kernel (attention_prefill.cu) and the wgmma kernel (attention_prefill_wgmma.cu).
//
// Rows are packed by GQA group: row r of a sequence is (token r / group, head
// kvh * group + r % group), so one block reads each K/V tile once for all the query heads
// that share it. A block takes kBlockM rows of one (sequence, kv head), in N row groups of
// kBlockM / N rows (the mma.sync kernel's warps, the wgmma kernel's warpgroups).
#pragma once
#include <cstdint>

#include "backend/cuda/attention_params.h"

namespace seam::cuda::flash {

// Per-block values that the key loop needs once per tile or step: the kernels keep them in
// shared memory, not registers (o and S take most of a thread's).
template <int N>
struct PrefillBlock {
  const int32_t* slots;  // the sequence's page-table row
  int seq, tile, kvh, q_begin, first_pos, n_rows;
  int key_end;                // keys the block needs: up to its last valid row's position
  int group_key_end[N];       // ... and each row group (0: the group has no valid row)
  int group_unmasked_end[N];  // keys below this are visible to all of the group's rows
};

// Fills `info` for block blockIdx.x (one thread calls it; info.seq < 0: the block has no
// rows, the grid being an upper bound). The kv head varies fastest in the block id, so the
// heavy tiles of EVERY head are dispatched in the first wave (with the head slowest, the
// last head's heaviest tiles would start near the end and leave a tail); within a sequence,
// heavy tiles (late rows, long causal range) get the low block ids, so they start first.
template <int kBlockM, int N>
__device__ __forceinline__ void locate_prefill_block(const AttentionParams& p, PrefillBlock<N>& info) {
  constexpr int kGroupRows = kBlockM / N;
  const int group = p.group;
  const int kvh = blockIdx.x % p.n_kv_heads;
  int b = blockIdx.x / p.n_kv_heads, seq = -1, tile = 0;
  for (int s = 0; s < p.n_prefill_seqs; ++s) {
    const int n_tiles = ((p.qo_indptr[s + 1] - p.qo_indptr[s]) * group + kBlockM - 1) / kBlockM;
    if (b < n_tiles) {
      seq = s;
      tile = n_tiles - 1 - b;
      break;
    }
    b -= n_tiles;
  }
  info.seq = seq;
  if (seq < 0) return;
  const int q_begin = p.qo_indptr[seq], n_q = p.qo_indptr[seq + 1] - q_begin;
  const int first_pos = p.seq_lens[seq] - n_q, n_rows = n_q * group;
  info.slots = p.page_table + int64_t(p.req_rows[seq]) * p.pt_stride;
  info.tile = tile;
  info.kvh = kvh;
  info.q_begin = q_begin;
  info.first_pos = first_pos;
  info.n_rows = n_rows;
  info.key_end = first_pos + (min(tile * kBlockM + kBlockM, n_rows) - 1) / group + 1;
  for (int g = 0; g < N; ++g) {
    const int row0 = tile * kBlockM + g * kGroupRows, last = min(row0 + kGroupRows, n_rows) - 1;
    info.group_key_end[g] = last >= row0 ? first_pos + last / group + 1 : 0;
    info.group_unmasked_end[g] = first_pos + row0 / group + 1;
  }
}

// Element offset of packed row `row` of the block's sequence in q or out (row stride `stride`).
template <int D, int N>
__device__ __forceinline__ int64_t prefill_row_offset(const PrefillBlock<N>& info, int group, int64_t stride,
                                                      int row) {
  const int tok = info.q_begin + row / group, head = info.kvh * group + row % group;
  return int64_t(tok) * stride + int64_t(head) * D;
}

// Blocks to launch: row tiles over all prefill sequences (+1 per sequence for its partial
// tile), times kv heads. Host sizes only, so the grid can be baked into a graph.
inline int64_t prefill_grid_blocks(const AttentionParams& p, int block_m) {
  const int64_t n_walk = (int64_t(p.n_prefill_tokens) * p.group + block_m - 1) / block_m + p.n_prefill_seqs;
  return n_walk * p.n_kv_heads;
}

}  // namespace seam::cuda::flash
