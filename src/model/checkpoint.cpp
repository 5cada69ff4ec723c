// Checkpoint::open: maps model.safetensors (or the shards of
// model.safetensors.index.json), finds every tensor the config needs by its
// Hugging Face name and checks its dtype and shape. A tensor seam would not use
// is an error too (an o_proj bias, an extra layer...): ignoring it would compute
// a different model than the checkpoint describes.
#include "model/checkpoint.h"

#include <filesystem>
#include <map>
#include <set>

#include "core/error.h"
#include "core/log.h"
#include "model/dummy_weights.h"
#include "model/fp8_checkpoint.h"
#include "model/json_file.h"
#include "model/safetensors.h"

namespace seam {

struct Checkpoint::Mapping {
  std::unique_ptr<SafetensorsFile> file;
};

namespace {

namespace fs = std::filesystem;

constexpr const char* kSingle = "model.safetensors";
constexpr const char* kIndex = "model.safetensors.index.json";

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// Tensors that carry no weights seam would need: old Llama exports store the
// RoPE table, which seam recomputes from the config.
bool is_ignorable(const std::string& name) {
  const std::string suffix = "rotary_emb.inv_freq";
  return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// A multimodal checkpoint's vision tower and projector (Gemma 3: vision_tower.*,
// multi_modal_projector.*, under model. in transformers 5): seam serves the text model only.
bool is_vision(const std::string& name) {
  for (const char* p : {"vision_tower.", "multi_modal_projector.", "model.vision_tower.", "model.multi_modal_projector."})
    if (starts_with(name, p)) return true;
  return false;
}

// Where each tensor name lives, and which names were taken.
// With a DummyWeights (--load-format dummy) it holds no file: take() describes a random tensor
// of the expected shape, contains() is false (the default layout), and nothing is unexpected.
class TensorIndex {
 public:
  TensorIndex(std::string missing_where) : missing_where_(std::move(missing_where)) {}
  explicit TensorIndex(const DummyWeights* dummy) : dummy_(dummy) {}

  void add(const std::string& name, const SafetensorsFile* file) { where_[name] = file; }

  bool contains(const std::string& name) const { return where_.count(name) != 0; }

  HostTensor take(const std::string& name, const std::vector<int64_t>& expected, const char* why = "") {
    if (dummy_) return dummy_->tensor(name, expected);
    auto it = where_.find(name);
    SEAM_CHECK(it != where_.end(), missing_where_, ": missing tensor '", name, "'", why);
    HostTensor t = it->second->tensor(name);
    SEAM_CHECK(t.shape == expected, it->second->file_name(), ": tensor '", name, "' has shape ", shape_str(t.shape),
               ", expected ", shape_str(expected));
    used_.insert(name);
    return t;
  }

  void mark_used(const std::string& name) { used_.insert(name); }
  // For the FP8 scales, whose shapes the caller checks (fp8_checkpoint.cpp).
  HostTensor take_any(const std::string& name) {
    used_.insert(name);
    return where_.at(name)->tensor(name);
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [name, file] : where_) out.push_back(name);
    return out;
  }

  // Marks every tensor `skip` selects used; returns how many.
  int skip_all(bool (*skip)(const std::string&)) {
    int n = 0;
    for (const auto& [name, file] : where_)
      if (skip(name)) used_.insert(name), ++n;
    return n;
  }

  void check_all_used() const {
    for (const auto& [name, file] : where_) {
      if (used_.count(name) || is_ignorable(name)) continue;
      throw Error(detail::concat(file->file_name(), ": unexpected tensor '", name,
                                 "' (the config does not use it, so seam would compute a different model)"));
    }
  }

 private:
  std::string missing_where_;  // the file a missing tensor should have been in
  const DummyWeights* dummy_ = nullptr;
  std::map<std::string, const SafetensorsFile*> where_;
  std::set<std::string> used_;
};

// Opens the shards named in the index json; every listed tensor must be in its shard.
std::vector<std::unique_ptr<SafetensorsFile>> open_sharded(const fs::path& dir, TensorIndex& index) {
  const nlohmann::json j = read_json_file((dir / kIndex).string(), kIndex);
  auto wm = j.is_object() ? j.find("weight_map") : j.end();
  SEAM_CHECK(j.is_object() && wm != j.end(), kIndex, ": missing field 'weight_map'");
  SEAM_CHECK(wm->is_object() && !wm->empty(), kIndex, ": field 'weight_map' must be a non-empty object");

  std::vector<std::unique_ptr<SafetensorsFile>> files;
  std::map<std::string, SafetensorsFile*> by_shard;
  for (const auto& [name, shard_json] : wm->items()) {
    SEAM_CHECK(shard_json.is_string(), kIndex, ": weight_map entry '", name, "' is not a file name");
    const std::string shard = shard_json.get<std::string>();
    // Shards live beside the index; a path would reach outside the model folder.
    SEAM_CHECK(!shard.empty() && shard.find('/') == std::string::npos && shard != "." && shard != "..", kIndex,
               ": weight_map entry '", name, "' names '", shard, "', which is not a file in the model folder");
    auto it = by_shard.find(shard);
    if (it == by_shard.end()) {
      const fs::path path = dir / shard;
      std::error_code ec;
      SEAM_CHECK(fs::exists(path, ec), path.string(), ": file not found (listed in ", kIndex, ")");
      files.push_back(SafetensorsFile::open(path.string()));
      it = by_shard.emplace(shard, files.back().get()).first;
    }
    SEAM_CHECK(it->second->contains(name), shard, ": missing tensor '", name, "' (", kIndex, " places it here)");
    index.add(name, it->second);
  }
  return files;
}

// A sparse layer's router, experts and (Qwen2-MoE) shared expert, by the style's names.
void take_moe_tensors(TensorIndex& index, const std::string& layer_prefix, const ModelConfig& c, MoeTensors& m) {
  const MoeConfig& moe = c.moe;
  const int64_t hidden = c.hidden_size, inter = moe.expert_intermediate_size, n_experts = moe.n_experts;
  const bool mixtral = moe.style == MoeStyle::mixtral;
  // Mixtral's hub checkpoints name the block block_sparse_moe; transformers 5's fused layout
  // names it mlp (MixtralSparseMoeBlock under the decoder layer's mlp).
  const bool mixtral_hub = mixtral && !index.contains(layer_prefix + "mlp.experts.gate_up_proj");
  const std::string block = layer_prefix + (mixtral_hub ? "block_sparse_moe." : "mlp.");
  m.router = index.take(block + "gate.weight", {n_experts, hidden}, " (the router of a mixture-of-experts layer)");
  if (index.contains(block + "experts.gate_up_proj")) {
    // transformers 5's in-memory layout, as some exports store it: one parameter per layer,
    // gate_up_proj [n_experts, 2 * inter, hidden] (each expert's gate rows, then its up rows:
    // forward does linear(x, gate_up_proj[e]).chunk(2, -1)) and down_proj [n_experts, hidden,
    // inter]. Each expert's parts become row views of the flattened tensors.
    HostTensor gate_up = index.take(block + "experts.gate_up_proj", {n_experts, 2 * inter, hidden});
    HostTensor down = index.take(block + "experts.down_proj", {n_experts, hidden, inter},
                                 " (beside experts.gate_up_proj)");
    gate_up.shape = {n_experts * 2 * inter, hidden};
    down.shape = {n_experts * hidden, inter};
    for (int64_t e = 0; e < n_experts; ++e) {
      m.gate.push_back(gate_up.rows(e * 2 * inter, inter));
      m.up.push_back(gate_up.rows(e * 2 * inter + inter, inter));
      m.down.push_back(down.rows(e * hidden, hidden));
    }
  } else {
    for (int64_t e = 0; e < n_experts; ++e) {
      const std::string x = block + "experts." + std::to_string(e) + ".";
      m.gate.push_back(index.take(x + (mixtral_hub ? "w1" : "gate_proj") + ".weight", {inter, hidden}));
      m.up.push_back(index.take(x + (mixtral_hub ? "w3" : "up_proj") + ".weight", {inter, hidden}));
      m.down.push_back(index.take(x + (mixtral_hub ? "w2" : "down_proj") + ".weight", {hidden, inter}));
    }
  }
  if (moe.has_shared_expert()) {
    const int64_t shared = moe.shared_expert_intermediate_size;
    const char* why = " (the config has shared_expert_intermediate_size)";
    m.shared_gate_proj = index.take(block + "shared_expert.gate_proj.weight", {shared, hidden}, why);
    m.shared_up_proj = index.take(block + "shared_expert.up_proj.weight", {shared, hidden}, why);
    m.shared_down_proj = index.take(block + "shared_expert.down_proj.weight", {hidden, shared}, why);
    m.shared_expert_gate = index.take(block + "shared_expert_gate.weight", {1, hidden}, why);
  }
}

// Every tensor the config needs, by its Hugging Face name, grouped by role; then the FP8 scales
// and the check that nothing was left over. `where` names the folder in log lines.
void take_tensors(TensorIndex& index, const ModelConfig& c, Checkpoint& ck, const std::string& where) {
  const int64_t hidden = c.hidden_size, inter = c.intermediate_size, vocab = c.vocab_size;
  const int64_t q_size = c.q_size(), kv_size = c.kv_size(), head_dim = c.head_dim;
  // The text model's prefix: model. ; a multimodal checkpoint's language_model.model. (the
  // hub's transformers 4.5x exports) or model.language_model. (transformers 5's own layout).
  std::string base = "model.";
  std::string head = "lm_head.weight";
  if (c.text_of_multimodal) {
    base = index.contains("model.language_model.embed_tokens.weight") ? "model.language_model." : "language_model.model.";
    if (base == "language_model.model.") head = "language_model.lm_head.weight";
    const int n_vision = index.skip_all(is_vision);
    log::info("%s: the text model of %s is loaded; %d vision tower / projector tensors are skipped", where.c_str(),
              c.architecture.c_str(), n_vision);
  }
  const bool fused = c.family == ModelFamily::phi3;  // Phi-3 stores q/k/v and gate/up fused
  ck.embed_tokens = index.take(base + "embed_tokens.weight", {vocab, hidden});
  ck.layers.resize(size_t(c.n_layers));
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string p = base + "layers." + std::to_string(i) + ".";
    LayerTensors& l = ck.layers[size_t(i)];
    l.input_layernorm = index.take(p + "input_layernorm.weight", {hidden});
    if (fused) {
      HostTensor qkv = index.take(p + "self_attn.qkv_proj.weight", {q_size + 2 * kv_size, hidden});
      l.q_proj = qkv.rows(0, q_size);
      l.k_proj = qkv.rows(q_size, kv_size);
      l.v_proj = qkv.rows(q_size + kv_size, kv_size);
    } else {
      l.q_proj = index.take(p + "self_attn.q_proj.weight", {q_size, hidden});
      l.k_proj = index.take(p + "self_attn.k_proj.weight", {kv_size, hidden});
      l.v_proj = index.take(p + "self_attn.v_proj.weight", {kv_size, hidden});
    }
    if (c.attention_bias) {
      const char* why = " (the config has attention_bias)";
      l.q_bias = index.take(p + "self_attn.q_proj.bias", {q_size}, why);
      l.k_bias = index.take(p + "self_attn.k_proj.bias", {kv_size}, why);
      l.v_bias = index.take(p + "self_attn.v_proj.bias", {kv_size}, why);
    }
    if (c.qk_norm) {
      l.q_norm = index.take(p + "self_attn.q_norm.weight", {head_dim});
      l.k_norm = index.take(p + "self_attn.k_norm.weight", {head_dim});
    }
    l.o_proj = index.take(p + "self_attn.o_proj.weight", {hidden, q_size});
    if (c.o_proj_bias) l.o_bias = index.take(p + "self_attn.o_proj.bias", {hidden}, " (the config has attention_bias)");
    l.post_attention_layernorm = index.take(p + "post_attention_layernorm.weight", {hidden});
    if (c.gemma_norms) {
      l.pre_feedforward_layernorm = index.take(p + "pre_feedforward_layernorm.weight", {hidden});
      l.post_feedforward_layernorm = index.take(p + "post_feedforward_layernorm.weight", {hidden});
    }
    if (c.moe.is_sparse_layer(i)) {
      take_moe_tensors(index, p, c, l.moe);
    } else {
      if (fused) {
        HostTensor gate_up = index.take(p + "mlp.gate_up_proj.weight", {2 * inter, hidden});
        l.gate_proj = gate_up.rows(0, inter);
        l.up_proj = gate_up.rows(inter, inter);
      } else {
        l.gate_proj = index.take(p + "mlp.gate_proj.weight", {inter, hidden});
        l.up_proj = index.take(p + "mlp.up_proj.weight", {inter, hidden});
      }
      l.down_proj = index.take(p + "mlp.down_proj.weight", {hidden, inter});
    }
  }
  ck.norm = index.take(base + "norm.weight", {hidden});
  if (c.tie_word_embeddings) {
    // transformers ties the head to the embedding and ignores a stored lm_head.
    ck.lm_head = ck.embed_tokens;
    index.mark_used(head);
  } else {
    ck.lm_head = index.take(head, {vocab, hidden}, " (tie_word_embeddings is false)");
  }
  // FP8: the scales beside each quantized weight, and the checks that weights are F8_E4M3
  // exactly where the quantization config says (model/fp8_checkpoint.h).
  take_fp8_tensors(c, ck, Fp8TensorSource{[&](const std::string& n) { return index.contains(n); },
                                           [&](const std::string& n) { return index.take_any(n); },
                                           [&] { return index.names(); }});
  index.check_all_used();
}

}  // namespace

std::unique_ptr<Checkpoint> Checkpoint::open(const std::string& dir_str, const ModelConfig& c) {
  const fs::path dir(dir_str);
  std::error_code ec;
  SEAM_CHECK(fs::is_directory(dir, ec), dir_str, ": model folder not found");
  std::unique_ptr<Checkpoint> ck(new Checkpoint());

  // Like transformers: a single model.safetensors wins over an index.
  const bool single = fs::exists(dir / kSingle, ec);
  SEAM_CHECK(single || fs::exists(dir / kIndex, ec), (dir / kSingle).string(), ": file not found (and no ", kIndex,
             ")");
  TensorIndex index(single ? kSingle : kIndex);
  if (single) {
    auto m = std::make_unique<Mapping>();
    m->file = SafetensorsFile::open((dir / kSingle).string());
    for (const auto& name : m->file->tensor_names()) index.add(name, m->file.get());
    ck->mappings_.push_back(std::move(m));
  } else {
    for (auto& f : open_sharded(dir, index)) {
      ck->mappings_.push_back(std::make_unique<Mapping>());
      ck->mappings_.back()->file = std::move(f);
    }
  }

  take_tensors(index, c, *ck, dir_str);
  return ck;
}

std::unique_ptr<Checkpoint> Checkpoint::dummy(const ModelConfig& c) {
  SEAM_CHECK(!c.quant.serialized(), "--load-format dummy: ", c.quant.source,
             " describes an FP8 checkpoint, whose scales a random fill cannot honour; use --quantization fp8 "
             "(FP8 at load) on a float config");
  const DummyWeights dummy(c);
  TensorIndex index(&dummy);
  std::unique_ptr<Checkpoint> ck(new Checkpoint());
  take_tensors(index, c, *ck, "--load-format dummy");
  return ck;
}

bool Checkpoint::is_dummy_format(const std::string& f) {
  SEAM_CHECK(f == "auto" || f == "safetensors" || f == "dummy", "--load-format: '", f,
             "' is not one of auto, safetensors, dummy");
  return f == "dummy";
}

std::unique_ptr<Checkpoint> Checkpoint::load(const std::string& dir, const ModelConfig& c, const std::string& f) {
  return is_dummy_format(f) ? dummy(c) : open(dir, c);
}

Checkpoint::~Checkpoint() = default;

HostTensor HostTensor::rows(int64_t begin, int64_t n) const {
  SEAM_ASSERT(shape.size() == 2 && begin >= 0 && n >= 0 && begin + n <= shape[0]);
  HostTensor t = *this;
  t.shape = {n, shape[1]};
  t.row_offset = row_offset + begin;
  if (random)
    t.fill.first += begin * shape[1];
  else
    t.data = static_cast<const uint8_t*>(data) + size_t(begin * shape[1]) * dtype_size(dtype);
  return t;
}  // each Mapping's SafetensorsFile unmaps its file

void HostTensor::to_f32(float* out) const {
  if (random)
    random_fill_host(fill, out, numel());
  else
    convert_to_f32(data, dtype, out, size_t(numel()));
}

}  // namespace seam
