#include "model/tp_shard.h"

#include <cstring>

#include "core/error.h"
#include "model/checkpoint.h"
#include "model/model_config.h"

namespace seam {

void check_tp_size(const ModelConfig& c, int tp) {
  SEAM_CHECK(tp >= 1, "--tp-size must be at least 1 (got ", tp, ")");
  if (tp == 1) return;
  auto divides = [&](int n, const char* what) {
    SEAM_CHECK(n % tp == 0, "--tp-size ", tp, " does not divide the model's ", n, " ", what,
               " (each rank must hold an equal share)");
  };
  divides(c.n_heads, "attention heads");
  SEAM_CHECK(c.n_kv_heads % tp == 0 || tp % c.n_kv_heads == 0, "--tp-size ", tp, " and the model's ",
             c.n_kv_heads, " KV heads: one must divide the other (KV heads are split, or replicated when fewer)");
  if (c.moe.any_dense_layer(c.n_layers) || !c.moe.enabled()) divides(c.intermediate_size, "intermediate_size rows");
  if (c.moe.enabled()) divides(c.moe.expert_intermediate_size, "expert intermediate rows");
  if (c.moe.has_shared_expert()) divides(c.moe.shared_expert_intermediate_size, "shared-expert intermediate rows");
  divides(c.vocab_size, "vocabulary entries (a padded vocabulary is not supported yet)");
  SEAM_CHECK(!c.quant.serialized(), "--tp-size ", tp, ": FP8 checkpoints (", quant_method_name(c.quant.method),
             ") are not sharded yet; use --tp-size 1, or a float checkpoint with --quantization fp8");
}

ModelConfig shard_model_config(const ModelConfig& c, int tp, int rank) {
  check_tp_size(c, tp);
  SEAM_CHECK(rank >= 0 && rank < tp, "tp rank ", rank, " is outside 0..", tp - 1);
  ModelConfig s = c;
  TpShard& t = s.tp;
  t.rank = rank;
  t.size = tp;
  t.vocab_local = c.vocab_size / tp;
  t.vocab_begin = rank * t.vocab_local;
  if (tp == 1) return s;
  s.n_heads = c.n_heads / tp;
  t.q_head_begin = rank * s.n_heads;
  if (c.n_kv_heads >= tp) {
    s.n_kv_heads = c.n_kv_heads / tp;
    t.kv_head_begin = rank * s.n_kv_heads;
  } else {
    // tp / n_kv ranks share each KV head; rank r's q heads [r * hq, (r + 1) * hq) all read
    // global KV head r * hq / (n_heads / n_kv) = r / (tp / n_kv).
    s.n_kv_heads = 1;
    t.kv_head_begin = rank / (tp / c.n_kv_heads);
  }
  s.intermediate_size = c.intermediate_size / tp;
  t.inter_begin = rank * s.intermediate_size;
  if (c.moe.enabled()) {
    s.moe.expert_intermediate_size = c.moe.expert_intermediate_size / tp;
    t.expert_inter_begin = rank * s.moe.expert_intermediate_size;
    s.moe.shared_expert_intermediate_size = c.moe.shared_expert_intermediate_size / tp;
    t.shared_inter_begin = rank * s.moe.shared_expert_intermediate_size;
  }
  return s;
}

HostTensor slice_1d(const HostTensor& t, int64_t begin, int64_t n) {
  SEAM_ASSERT(t.shape.size() == 1 && begin >= 0 && n >= 0 && begin + n <= t.shape[0], t.name);
  HostTensor s = t;
  s.shape = {n};
  if (t.random)  // --load-format dummy: the same stream, moved (as HostTensor::rows)
    s.fill.first += begin;
  else
    s.data = static_cast<const uint8_t*>(t.data) + size_t(begin) * dtype_size(t.dtype);
  return s;
}

HostTensor slice_cols(const HostTensor& t, int64_t begin, int64_t n, std::vector<uint8_t>& storage) {
  SEAM_ASSERT(t.shape.size() == 2 && begin >= 0 && n >= 0 && begin + n <= t.shape[1], t.name);
  const int64_t rows = t.shape[0];
  if (t.random) {
    // --load-format dummy: a column slice is no contiguous run of the stream, so its values
    // are computed here in float32 (element (r, c) is stream index first + r * cols + c), the
    // bits TP 1's device fill writes; the upload rounds them to the weight dtype as it does.
    storage.resize(size_t(rows * n) * sizeof(float));
    float* out = reinterpret_cast<float*>(storage.data());
    for (int64_t r = 0; r < rows; ++r) {
      RandomFill part = t.fill;
      part.first += r * t.shape[1] + begin;
      random_fill_host(part, out + r * n, n);
    }
    HostTensor s = t;
    s.shape = {rows, n};
    s.dtype = DType::f32;
    s.random = false;
    s.data = storage.data();
    return s;
  }
  const size_t es = dtype_size(t.dtype), row_bytes = size_t(n) * es, src_row = size_t(t.shape[1]) * es;
  storage.resize(size_t(rows) * row_bytes);
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(storage.data() + size_t(r) * row_bytes,
                static_cast<const uint8_t*>(t.data) + size_t(r) * src_row + size_t(begin) * es, row_bytes);
  HostTensor s = t;
  s.shape = {rows, n};
  s.data = storage.data();
  return s;
}

MoeTensors shard_moe_tensors(const MoeTensors& t, const ModelConfig& c, std::vector<std::vector<uint8_t>>& storage) {
  const TpShard& tp = c.tp;
  auto cols = [&](const HostTensor& w, int64_t begin, int64_t n) {
    storage.emplace_back();
    return slice_cols(w, begin, n, storage.back());
  };
  MoeTensors s;
  s.router = t.router;
  const int64_t e0 = tp.expert_inter_begin, ne = c.moe.expert_intermediate_size;
  for (size_t e = 0; e < t.gate.size(); ++e) {
    s.gate.push_back(t.gate[e].rows(e0, ne));
    s.up.push_back(t.up[e].rows(e0, ne));
    s.down.push_back(cols(t.down[e], e0, ne));
  }
  if (t.shared_down_proj.defined()) {
    const int64_t s0 = tp.shared_inter_begin, ns = c.moe.shared_expert_intermediate_size;
    s.shared_gate_proj = t.shared_gate_proj.rows(s0, ns);
    s.shared_up_proj = t.shared_up_proj.rows(s0, ns);
    s.shared_down_proj = cols(t.shared_down_proj, s0, ns);
    s.shared_expert_gate = t.shared_expert_gate;
  }
  return s;
}

}  // namespace seam
