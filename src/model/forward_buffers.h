// ForwardBuffers: the fixed-address device tensors a model's forward reads and writes, as
// the model sees them. The runtime's StepBuffers owns the memory (and adds the sampling
// inputs, which the model never reads); every captured graph bakes these addresses, so
// they never move. Rows: max_tokens for the per-token tensors, max_seqs for the rest.
#pragma once
#include "core/tensor.h"
#include "model/moe_buffers.h"

namespace seam {

struct ForwardBuffers {
  // per token: inputs
  Tensor input_ids;      // [max_tokens] i32
  Tensor positions;      // [max_tokens] i32
  Tensor out_cache_loc;  // [max_tokens] i32 KV write slot
  // per token: activations
  Tensor residual;       // [max_tokens, hidden]   the residual stream, updated in place
  Tensor normed;         // [max_tokens, hidden]   RMSNorm output (unwritten where a backend fuses the norm)
  Tensor qkv;            // [max_tokens, q_size + 2 * kv_size]
  Tensor attn_out;       // [max_tokens, q_size]   the bridge: written by attention, read by the next piece
  Tensor gate_up;        // [max_tokens, 2 * inter]
  Tensor act;            // [max_tokens, inter]
  MoeBuffers moe;        // mixture-of-experts scratch (undefined for a dense model)
  // per sequence
  Tensor last_idx;       // [max_seqs] i32 row of each sequence's last token
  Tensor last_hidden;    // [max_seqs, hidden]
  Tensor logits;         // [max_seqs, vocab] f32
  // tensor parallelism only (undefined for one rank)
  Tensor logits_shard;   // [max_seqs, vocab / tp] f32  the rank's slice of the head's output
  Tensor logits_gather;  // [tp * max_seqs * vocab / tp] f32  all_gather_cols' scratch
};

}  // namespace seam
