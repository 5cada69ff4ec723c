// Split-KV (flash-decoding) tensor-core attention for the decode rows of a batch.
#pragma once
#include <cuda_runtime.h>

#include "backend/cuda/attention_params.h"
#include "core/dtype.h"

namespace seam::cuda {

// True when the kernel covers this dtype / head dim / GQA group (bf16 or f16; d 64, 96, 128 or 256;
// group <= 16: one warp's 16 MMA rows hold a KV head's query heads).
bool flash_decode_supported(DType dtype, int head_dim, int group);

// Attention of sequences [n_prefill_seqs, n_seqs): one new token each, seeing its whole
// context or, with p.window, its last p.window keys (the splits cut only that range: keys
// before it are not read); p.softcap caps the scores. The KV range of each (sequence, kv
// head) is cut into a number of splits fixed by host sizes only (never by seq_lens, which live on the device and change between graph
// replays): each split's range is computed on the device from seq_lens. Splits > 1 write
// fp32 partials into `scratch` (allocated once by the backend: `scratch_bytes`); the split
// count is capped so the partials always fit. The last split of a (sequence, kv head) to finish
// merges them in the same kernel, counting arrivals in `counters` ([n_counters] i32, zeroed once
// at allocation; every launch leaves them zero); with fewer than n_decode_seqs * n_kv_heads
// counters (or none) a combine kernel merges them instead.
void launch_flash_decode(const AttentionParams& p, DType dtype, float* scratch, size_t scratch_bytes, int* counters,
                         int n_counters, int n_sms, cudaStream_t stream);

// The warps a block of this decode batch gets on this GPU (decode_block_warps.h's rule over the
// kernel's occupancy, under SEAM_DECODE_BLOCK_WARPS): what launch_flash_decode launches. n_sms: the
// count the backend passes it. Tests ask it to show which layout ran.
int flash_decode_block_warps(DType dtype, int head_dim, bool kv_fp8, int64_t n_decode_rows, int n_kv_heads,
                             int n_sms);

// The split count for these sizes: one wave of resident blocks (blocks_per_sm from the
// occupancy of the kernel), capped by kMaxSplits, the scratch and the keys a row reads (eager
// max_seq_len, or the window).
int flash_decode_splits(const AttentionParams& p, size_t scratch_bytes, int n_sms, int blocks_per_sm);

}  // namespace seam::cuda
