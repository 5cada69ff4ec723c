// Checkpoint: the tensors of a Hugging Face folder (*.safetensors, memory-mapped,
// one file or sharded through model.safetensors.index.json), validated against
// the ModelConfig and grouped by role. Data stays in the mapping; the backend
// converts/uploads it once at load.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/random_fill.h"
#include "model/model_config.h"

namespace seam {

// A tensor inside a mapped safetensors file, or (--load-format dummy) a described random one:
// `random` set, `data` null, dtype f32 (the values are float32 until the upload converts them).
// Code that reads the values on the host goes through to_f32, which computes a random tensor's.
struct HostTensor {
  std::string name;
  DType dtype = DType::f32;  // F32, F16, BF16 or (FP8 checkpoints) F8_E4M3
  std::vector<int64_t> shape;
  const void* data = nullptr;  // points into the mapping; valid while the Checkpoint lives
  bool random = false;         // a dummy weight: its values are `fill`'s stream (core/random_fill.h)
  RandomFill fill;
  // A rows() view's first row in the stored tensor `name` (0 for the whole tensor): a fused
  // Phi-3 qkv_proj's k part starts at q_size. An FP8 part's scales are the stored tensor's,
  // looked up at these rows.
  int64_t row_offset = 0;
  // Rows [begin, begin + n) of a 2-D tensor, a view into the same mapping (or the same stream).
  HostTensor rows(int64_t begin, int64_t n) const;
  // The numel() values as float32 (converted, or computed for a random tensor).
  void to_f32(float* out) const;
  int64_t numel() const {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
  bool defined() const { return data != nullptr || random; }
};

// The scales of one FP8 weight as the checkpoint stores them (model/fp8_checkpoint.h checks
// their shapes and values against the QuantConfig).
struct Fp8Scales {
  HostTensor weight_scale;  // per-tensor [] / [1], per-channel [out, 1] / [out], block [ceil(out/128), ceil(in/128)]
  HostTensor input_scale;   // [] / [1] (static activation scale) or undefined
};

// A sparse (mixture-of-experts) layer's tensors (MoeConfig), experts in id order.
struct MoeTensors {
  HostTensor router;                    // [n_experts, hidden]   mlp.gate (Mixtral: block_sparse_moe.gate)
  std::vector<HostTensor> gate, up;     // n_experts x [expert_inter, hidden]   (Mixtral: w1, w3)
  std::vector<HostTensor> down;         // n_experts x [hidden, expert_inter]   (Mixtral: w2)
  HostTensor shared_gate_proj, shared_up_proj;  // [shared_inter, hidden]       (Qwen2-MoE only)
  HostTensor shared_down_proj;                  // [hidden, shared_inter]
  HostTensor shared_expert_gate;                // [1, hidden]
  bool defined() const { return router.defined(); }
};

struct LayerTensors {
  HostTensor input_layernorm;           // [hidden]
  HostTensor q_proj, k_proj, v_proj;    // [q_size, hidden], [kv_size, hidden], [kv_size, hidden]
                                        // (Phi-3: row ranges of its fused qkv_proj)
  HostTensor q_bias, k_bias, v_bias;    // [q_size], [kv_size], [kv_size]   (attention_bias only)
  HostTensor q_norm, k_norm;            // [head_dim]                        (qk_norm only)
  HostTensor o_proj;                    // [hidden, q_size]
  HostTensor o_bias;                    // [hidden]                          (o_proj_bias only)
  HostTensor post_attention_layernorm;  // [hidden]  Llama: the MLP's pre-norm; Gemma: the attention output's norm
  HostTensor pre_feedforward_layernorm, post_feedforward_layernorm;  // [hidden]  (Gemma only)
  HostTensor gate_proj, up_proj;        // [inter, hidden]  (Phi-3: the halves of its fused gate_up_proj)
  HostTensor down_proj;                 // [hidden, inter]
  MoeTensors moe;                       // sparse layers only; their gate/up/down_proj stay undefined
};

class Checkpoint {
 public:
  // Maps every safetensors file of `dir` and checks every tensor the config needs:
  // present, shape as expected, dtype F32/F16/BF16, data inside the file.
  // Throws seam::Error with a one-line message naming the file and the problem.
  static std::unique_ptr<Checkpoint> open(const std::string& dir, const ModelConfig& config);
  // --load-format dummy: every tensor the config needs, by the same names and shapes, as a
  // random tensor (HostTensor::random) that the backend fills on the device; no file is read.
  // Seeded by the tensor's name, so two loads give the same weights (model/dummy_weights.h
  // has the value ranges and why). A serialized FP8 config (quantization_config) is refused.
  static std::unique_ptr<Checkpoint> dummy(const ModelConfig& config);
  // --load-format (vLLM's flag): "auto" and "safetensors" open `dir`'s *.safetensors, "dummy"
  // builds random weights from the config alone. Anything else is an error naming the flag.
  static std::unique_ptr<Checkpoint> load(const std::string& dir, const ModelConfig& config,
                                          const std::string& load_format);
  static bool is_dummy_format(const std::string& load_format);  // throws for an unknown format
  ~Checkpoint();
  Checkpoint(const Checkpoint&) = delete;
  Checkpoint& operator=(const Checkpoint&) = delete;

  HostTensor embed_tokens;  // [vocab, hidden]
  std::vector<LayerTensors> layers;
  HostTensor norm;          // [hidden]
  HostTensor lm_head;       // [vocab, hidden]; equals embed_tokens when tied
  // FP8 checkpoints (ModelConfig::quant): the scales of each F8_E4M3 weight, by the weight's
  // tensor name, and the KV cache's per-layer k/v scales (k_scale / v_scale), by tensor name.
  std::map<std::string, Fp8Scales> fp8_scales;
  std::map<std::string, HostTensor> kv_scales;

 private:
  Checkpoint() = default;
  struct Mapping;
  std::vector<std::unique_ptr<Mapping>> mappings_;
};

}  // namespace seam
