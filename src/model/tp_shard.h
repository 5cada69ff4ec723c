// TpShard: which part of a model one tensor-parallel rank holds (Megatron-style sharding, as
// sglang and vLLM):
//   column-parallel (rows of W split): q/k/v (by heads; a fused Phi-3 qkv_proj per part),
//     gate/up (by intermediate rows; Phi-3's fused gate_up_proj per half), the MoE experts'
//     gate/up, the shared expert's gate/up, q/k/v biases, and the lm_head (by vocabulary);
//   vocabulary-parallel embedding: the rank's rows of the table (Backend::embedding_shard, then
//     an all-reduce); a tied head is that same shard;
//   row-parallel (columns of W split, then an all-reduce): o_proj and down (dense, expert,
//     shared expert); a row-parallel bias is held by rank 0 only (added once to the sum);
//   replicated: norms, q/k norms, the router, the shared-expert gate.
// KV heads are split like q heads when there are at least as many as ranks; with fewer, each
// rank holds the one KV head its q heads read (replicated tp / n_kv_heads times).
//
// shard_model_config turns the model's config into the rank's: n_heads, n_kv_heads and the
// intermediate sizes become the rank's, vocab_size stays the model's (the logits are gathered
// to full width before sampling), and `tp` records the slices. TP 1 returns the config as is.
#pragma once
#include <cstdint>
#include <vector>

namespace seam {

struct ModelConfig;
struct HostTensor;
struct MoeTensors;

struct TpShard {
  int rank = 0;
  int size = 1;
  int q_head_begin = 0;        // the rank's first q head (global index)
  int kv_head_begin = 0;       // the rank's first KV head (global index)
  int inter_begin = 0;         // first row of gate/up, first column of down (dense layers)
  int expert_inter_begin = 0;  // the same inside each expert
  int shared_inter_begin = 0;  // the same for Qwen2-MoE's shared expert
  int vocab_begin = 0;         // the lm_head rows this rank computes: [vocab_begin, vocab_begin + vocab_local)
  int vocab_local = 0;
  bool active() const { return size > 1; }
};

// Throws seam::Error naming --tp-size and the model's count when the model cannot be split
// into `tp_size` ranks (heads, KV heads, intermediate sizes, vocabulary, FP8 checkpoints).
void check_tp_size(const ModelConfig& c, int tp_size);
// The config of rank `rank` of `tp_size` (check_tp_size first).
ModelConfig shard_model_config(const ModelConfig& c, int tp_size, int rank);

// Host-side slices of checkpoint tensors (HostTensor::rows is the row view; these add the rest).
// Elements [begin, begin + n) of a 1-D tensor (a bias): a view.
HostTensor slice_1d(const HostTensor& t, int64_t begin, int64_t n);
// Columns [begin, begin + n) of a 2-D tensor, copied into `storage` (which must outlive the
// result): the row-parallel o_proj / down shards.
HostTensor slice_cols(const HostTensor& t, int64_t begin, int64_t n, std::vector<uint8_t>& storage);

// A sparse layer's tensors for the rank of `shard` (a shard_model_config result): each
// expert's gate/up rows and down columns of the rank's expert_inter slice, the shared
// expert's likewise; router and shared-expert gate whole. Column copies go to `storage`.
MoeTensors shard_moe_tensors(const MoeTensors& t, const ModelConfig& shard, std::vector<std::vector<uint8_t>>& storage);

}  // namespace seam
