// MoeLayer: the sparse feed-forward of a mixture-of-experts layer (Qwen2-MoE, Qwen3-MoE,
// Mixtral; MoeConfig has the math), owning its router, its experts and Qwen2-MoE's shared
// expert on the device. LlamaModel runs it in place of the dense MLP in the layers
// MoeConfig::is_sparse_layer names:
//
//   normed = rms_norm(residual) * ln_post
//   router_logits = normed @ W_router^T                    (Linear, activation dtype)
//   topk_ids, topk_weights = moe_route(router_logits)      (softmax in float32, top-k, renorm)
//   residual += moe_experts(normed, topk_ids, topk_weights)
//   Qwen2-MoE: residual += sigmoid(normed @ w_shared_gate^T) * shared_expert(normed)
//
// Expert weights are laid out at load for the kernels: each expert's gate and up rows fused
// ([n_experts, 2 * inter, hidden], gate first as in a dense gate_up), down [n_experts, hidden,
// inter]; FP8 experts are dequantized into the activation dtype at load. Every op acts on all n rows alike (no mode-dependent work), so the layer sits
// inside a piece and is captured with it.
#pragma once
#include "backend/backend.h"
#include "model/checkpoint.h"
#include "model/device_weight.h"
#include "model/forward_buffers.h"
#include "model/linear.h"
#include "model/model_config.h"

namespace seam {

class MoeLayer {
 public:
  // Uploads `t` (a sparse layer's tensors) in `format`. A serialized FP8 checkpoint (`ck` holds
  // the scales) may store any of them F8_E4M3: the experts are then dequantized into `format`
  // at load (model/fp8_dequant.h), the router and the shared expert run as FP8 linears.
  MoeLayer(Backend& backend, const ModelConfig& c, const MoeTensors& t, WeightFormat format, const Checkpoint& ck);

  size_t bytes() const { return bytes_; }
  size_t expert_bytes() const { return gate_up_.bytes() + down_.bytes(); }
  // Whether some expert was F8_E4M3 in the checkpoint (dequantized at load).
  bool experts_dequantized() const { return experts_dequantized_; }
  const Tensor& w_gate_up() const { return w_gate_up_; }  // [n_experts, 2 * inter, hidden]
  const Tensor& w_down() const { return w_down_; }        // [n_experts, hidden, inter]

  // residual += the layer's feed-forward of rms_norm(residual) * ln_post, on the first n rows of
  // buf (writes buf.normed, buf.moe and, with a shared expert, buf.gate_up / buf.act).
  void forward(const ForwardBuffers& buf, const Tensor& ln_post, float eps, int n) const;

 private:
  Backend* backend_;
  bool renormalize_;
  Linear router_;          // [n_experts, hidden]
  DeviceWeight gate_up_;   // owns w_gate_up_
  DeviceWeight down_;      // owns w_down_
  Tensor w_gate_up_;       // [n_experts, 2 * inter, hidden]
  Tensor w_down_;          // [n_experts, hidden, inter]
  Linear shared_gate_up_;  // [2 * shared_inter, hidden] or undefined (Qwen2-MoE only)
  Linear shared_down_;     // [hidden, shared_inter]
  Linear shared_gate_;     // [1, hidden]
  TpShard tp_;             // the rank's share (size 1: the whole layer)
  size_t bytes_ = 0;
  bool experts_dequantized_ = false;
};

}  // namespace seam
