#include "model/moe_layer.h"

#include "model/fp8_dequant.h"
#include "model/fp8_linear.h"

namespace seam {

MoeLayer::MoeLayer(Backend& backend, const ModelConfig& c, const MoeTensors& t, WeightFormat format,
                   const Checkpoint& ck)
    : backend_(&backend), renormalize_(c.moe.renormalize()), tp_(c.tp) {
  const MoeConfig& m = c.moe;
  const int64_t n_experts = m.n_experts, inter = m.expert_intermediate_size, hidden = c.hidden_size;
  SEAM_ASSERT(t.defined() && int64_t(t.gate.size()) == n_experts && t.up.size() == t.gate.size() &&
              t.down.size() == t.gate.size());
  // A serialized FP8 checkpoint's router and shared expert load as it stores them (FP8 or float:
  // load_linear); under --quantization fp8 they stay float, as the experts do.
  auto linear = [&](std::vector<const HostTensor*> parts) {
    return c.quant.serialized() ? load_linear(backend, parts, {}, format, c.quant, ck)
                                : Linear::load(backend, parts, {}, format);
  };
  router_ = linear({&t.router});
  // Each expert's gate rows then its up rows, expert after expert: [n_experts * 2 * inter, hidden].
  std::vector<const HostTensor*> gate_up, down;
  for (int64_t e = 0; e < n_experts; ++e) {
    gate_up.push_back(&t.gate[size_t(e)]);
    gate_up.push_back(&t.up[size_t(e)]);
    down.push_back(&t.down[size_t(e)]);
  }
  const DType dtype = weight_format_dtype(format);
  // FP8 experts (F8_E4M3 in a serialized checkpoint) are dequantized into `dtype` as they are
  // uploaded (model/fp8_dequant.h: weight-only FP8; every MoE kernel reads float experts).
  auto upload = [&](const std::vector<const HostTensor*>& parts) {
    std::vector<const Fp8Scales*> scales;
    bool any_fp8 = false;
    for (const HostTensor* p : parts) {
      const Fp8Scales* s = nullptr;
      if (p->dtype == DType::fp8_e4m3) {
        auto it = ck.fp8_scales.find(p->name);
        SEAM_ASSERT(it != ck.fp8_scales.end(), "no FP8 scales for ", p->name);
        s = &it->second;
        any_fp8 = true;
      }
      scales.push_back(s);
    }
    experts_dequantized_ = experts_dequantized_ || any_fp8;
    return any_fp8 ? upload_fp8_dequantized(backend, parts, scales, c.quant.weight, dtype)
                   : DeviceWeight::upload(backend, parts, dtype);
  };
  gate_up_ = upload(gate_up);
  down_ = upload(down);
  w_gate_up_ = gate_up_.tensor().view({n_experts, 2 * inter, hidden});
  w_down_ = down_.tensor().view({n_experts, hidden, inter});
  bytes_ = router_.bytes() + gate_up_.bytes() + down_.bytes();
  if (m.has_shared_expert()) {
    shared_gate_up_ = linear({&t.shared_gate_proj, &t.shared_up_proj});
    shared_down_ = linear({&t.shared_down_proj});
    shared_gate_ = linear({&t.shared_expert_gate});
    bytes_ += shared_gate_up_.bytes() + shared_down_.bytes() + shared_gate_.bytes();
  }
}

void MoeLayer::forward(const ForwardBuffers& buf, const Tensor& ln_post, float eps, int n) const {
  Backend& be = *backend_;
  Tensor residual = buf.residual.rows(n), normed = buf.normed.rows(n);  // [n, hidden]
  const MoeBuffers& m = buf.moe;
  Tensor ids = m.topk_ids.rows(n), weights = m.topk_weights.rows(n);  // [n, k]
  // The norm, the router and the routing in one op where the router is a plain weight (a backend
  // may fuse them: CUDA's one-row router GEMV normalises, writes `normed` exactly as rms_norm and
  // routes in its last block); an FP8 router runs apart. Either way `normed` is written: the
  // experts and the shared expert read it.
  if (!router_.is_fp8() && !router_.has_bias()) {
    be.moe_norm_router_route(ids, weights, m.router_logits.rows(n), normed, residual, ln_post, eps, router_.weight(),
                             renormalize_);
  } else {
    be.rms_norm(normed, residual, ln_post, eps);
    router_.apply(m.router_logits.rows(n), normed);  // [n, n_experts]
    be.moe_route(ids, weights, m.router_logits.rows(n), renormalize_);
  }
  // Tensor parallelism: every rank routes alike (whole router, same input) and its experts
  // add their slice's partial outputs. Rank 0 adds them to the residual, the others to zero
  // (the residual has been read: `normed` holds what the experts need); the all-reduce
  // at the end sums residual + every partial.
  if (tp_.active() && tp_.rank != 0) be.fill(residual, 0.f);
  be.moe_experts(residual, normed, w_gate_up_, w_down_, ids, weights,
                 MoeScratch{m.expert_act, m.expert_out, m.expert_index});
  if (shared_down_.weight().defined()) {
    // Qwen2-MoE's shared expert: a dense SiLU MLP scaled by sigmoid(shared_expert_gate(x))
    // (linear in its down projection's output, so the ranks' partials sum to the whole).
    const int64_t shared = shared_down_.in_features();
    Tensor gate_up = buf.gate_up.rows(n).slice_cols(0, 2 * shared), act = buf.act.rows(n).slice_cols(0, shared);
    shared_gate_up_.apply(gate_up, normed);
    be.silu_mul(act, gate_up);
    shared_down_.apply(m.shared_out.rows(n), act);
    shared_gate_.apply(m.shared_gate.rows(n), normed);
    be.moe_shared_expert_add(residual, m.shared_out.rows(n), m.shared_gate.rows(n));
  }
  if (tp_.active()) be.all_reduce_sum(residual);
}

}  // namespace seam
