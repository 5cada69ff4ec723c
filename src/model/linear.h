// Linear: one linear layer, y = x @ W^T (+ b) with W [out, in] in Hugging Face layout,
// owning its weight and bias on the device. Its weight format is a property of the layer
// (weight_format.h), fixed at load.
//
// Each method is exactly one Backend op, the one the model issues at that point, so a
// layer costs what the bare op costs: no copy, no extra launch, no virtual call beyond the
// backend's own. The fused variants exist because the backend fuses the norm before and
// the epilogue after the product (CUDA's batch-1 GEMV does RMSNorm, RoPE + KV store and
// SiLU * up in one kernel); a layer reaches them through the same object.
//
// Room to grow: a quantized format branches inside these methods to its backend GEMM
// (with its scales as more DeviceWeights); a mixture-of-experts or a tensor-parallel
// (column/row sharded) layer is another class beside this one, used by the model where a
// Linear is today. The graph runners and ModelRunner never see weights.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "model/checkpoint.h"
#include "model/device_weight.h"
#include "model/quant_config.h"
#include "model/weight_format.h"

namespace seam {

class Linear {
 public:
  Linear() = default;  // undefined until loaded

  // Loads W from `weight_parts` (concatenated along the output dim: fused q/k/v, gate/up)
  // and b from `bias_parts` (none: no bias), converted once to `format`.
  static Linear load(Backend& backend, const std::vector<const HostTensor*>& weight_parts,
                     const std::vector<const HostTensor*>& bias_parts, WeightFormat format);
  // A bias-free layer over an already uploaded weight, shared (an lm_head tied to the
  // embedding). The weight must be stored in `format`.
  static Linear shared(Backend& backend, DeviceWeight weight, WeightFormat format);
  // A load-time factor on some rows of a serialized FP8 part, folded into their weight scales
  // (LongRoPE's attention factor under partial rotary, model/weight_folds.h, which a float part
  // takes on its values): rows r of the part with r % period < count have scale * factor (one
  // float32 rounding). 128x128 block scales, shared by rows with and without the factor, cannot
  // take it: refused.
  struct RowFold {
    int64_t period = 0, count = 0;
    float factor = 1.f;
    bool active() const { return factor != 1.f; }
  };
  // An FP8 layer (fp8_linear.cpp): from F8_E4M3 parts and their checkpoint scales (a part that
  // is a rows() view of a stored tensor takes that tensor's scales at its rows), or, with
  // `scales` empty (--quantization fp8), from float parts quantized here. The bias stays in
  // `act`. `folds`: empty, or one a part.
  static Linear load_fp8(Backend& backend, const std::vector<const HostTensor*>& weight_parts,
                         const std::vector<const HostTensor*>& bias_parts, const std::vector<const Fp8Scales*>& scales,
                         const QuantConfig& quant, DType act, const std::vector<RowFold>& folds = {});

  WeightFormat format() const { return format_; }
  int64_t out_features() const { return weight_.tensor().size(0); }
  int64_t in_features() const { return weight_.tensor().size(1); }
  bool has_bias() const { return bias_.defined(); }
  const Tensor& weight() const { return weight_.tensor(); }
  const Tensor& bias() const { return bias_.tensor(); }  // undefined without bias
  size_t bytes() const {
    return weight_.bytes() + bias_.bytes() + w_scale_.bytes() + w_scale_blocks_.bytes() + input_scale_.bytes();
  }
  bool is_fp8() const { return format_ == WeightFormat::fp8_e4m3; }
  const Fp8Weight& fp8() const { return fp8_; }  // defined when is_fp8()

  // out = x @ W^T (+ b).   x [n, in], out [n, out]
  void apply(Tensor out, Tensor x) const {
    if (is_fp8()) return backend_->linear_fp8(out, x, fp8_, bias(), false);
    backend_->linear(out, x, weight(), bias());
  }
  // out += x @ W^T (+ b), in place (the residual stream takes o_proj and down_proj this way).
  void accumulate(Tensor out, Tensor x) const {
    if (is_fp8()) return backend_->linear_fp8(out, x, fp8_, bias(), true);
    backend_->linear_accumulate(out, x, weight(), bias());
  }
  // accumulate, where the caller's very next op is `next`'s norm fusion (apply_rms_normed,
  // apply_rms_normed_rope_store or apply_rms_normed_act) of out with norm_weight and eps: an FP8
  // pair runs Backend::linear_fp8_accumulate_before_norm (the backend may make that norm's FP8
  // activations here); anything else is accumulate.
  void accumulate_before_norm(Tensor out, Tensor x, Tensor norm_weight, float eps, const Linear& next) const {
    if (is_fp8() && next.is_fp8())
      return backend_->linear_fp8_accumulate_before_norm(out, x, fp8_, bias(), norm_weight, eps, next.fp8_);
    accumulate(out, x);
  }
  // A sublayer's output projection and post-norm: out = x @ W^T (+ b), then residual +=
  // rms_norm(out) * norm_weight (Backend::linear_rms_norm_add). An FP8 layer runs linear_fp8
  // and rms_norm_add.
  void apply_rms_norm_add(Tensor residual, Tensor out, Tensor x, Tensor norm_weight, float eps) const {
    if (is_fp8()) {
      backend_->linear_fp8(out, x, fp8_, bias(), false);
      return backend_->rms_norm_add(residual, out, norm_weight, eps);
    }
    backend_->linear_rms_norm_add(residual, out, x, weight(), bias(), norm_weight, eps);
  }
  // out = rms_norm(x) * norm_weight @ W^T (+ b); normed is scratch a fusing backend may
  // leave unwritten.
  // An FP8 layer runs Backend::rms_norm_linear_fp8.
  void apply_rms_normed(Tensor out, Tensor normed, Tensor x, Tensor norm_weight, float eps) const {
    if (is_fp8()) return backend_->rms_norm_linear_fp8(out, normed, x, norm_weight, eps, fp8_, bias());
    backend_->rms_norm_linear(out, normed, x, norm_weight, eps, weight(), bias());
  }
  // The attention input stage: qkv = rms_norm(x) * norm_weight @ W^T (+ b), then RoPE on
  // its q and k and the K/V store (Backend::rms_norm_qkv_rope_store).
  void apply_rms_normed_rope_store(Tensor qkv, Tensor normed, Tensor x, Tensor norm_weight, float eps,
                                   const RopeStoreArgs& r) const {
    if (is_fp8()) return backend_->rms_norm_qkv_rope_store_fp8(qkv, normed, x, norm_weight, eps, fp8_, bias(), r);
    backend_->rms_norm_qkv_rope_store(qkv, normed, x, norm_weight, eps, weight(), bias(), r);
  }
  // The MLP's first half: [gate | up] = rms_norm(x) * norm_weight @ W^T, act = f(gate) * up with
  // f SiLU or GELU-tanh (Backend::rms_norm_gate_up_act; the layer has no bias). An FP8 layer
  // runs Backend::rms_norm_gate_up_act_fp8; `next`, when given, is the layer the caller applies to
  // act right after and nothing else reads act (the backend may then hand it act's FP8 codes and
  // leave act unwritten, where both are FP8).
  void apply_rms_normed_act(Tensor act, Tensor gate_up, Tensor normed, Tensor x, Tensor norm_weight, float eps,
                            Activation f, const Linear* next = nullptr) const {
    SEAM_ASSERT(!has_bias(), "the fused gate_up + activation op takes no bias");
    if (is_fp8())
      return backend_->rms_norm_gate_up_act_fp8(act, gate_up, normed, x, norm_weight, eps, fp8_, f,
                                                next != nullptr && next->is_fp8() ? &next->fp8_ : nullptr);
    backend_->rms_norm_gate_up_act(act, gate_up, normed, x, norm_weight, eps, weight(), f);
  }

 private:
  Backend* backend_ = nullptr;
  WeightFormat format_ = WeightFormat::f32;
  DeviceWeight weight_;  // [out, in] in weight_format_dtype(format_)
  DeviceWeight bias_;    // [out] or undefined
  DeviceWeight w_scale_, w_scale_blocks_, input_scale_;  // FP8 only: fp8_.w_scale, w_scale_blocks, input_scale
  Fp8Weight fp8_;                       // FP8 only: views of weight_ and the scales
};

}  // namespace seam
