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

// Where each tensor name lives, and which names were taken.
class TensorIndex {
 public:
  TensorIndex(std::string missing_where) : missing_where_(std::move(missing_where)) {}

  void add(const std::string& name, const SafetensorsFile* file) { where_[name] = file; }

  bool contains(const std::string& name) const { return where_.count(name) != 0; }

  HostTensor take(const std::string& name, const std::vector<int64_t>& expected, const char* why = "") {
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

  void check_all_used() const {
    for (const auto& [name, file] : where_) {
      if (used_.count(name) || is_ignorable(name)) continue;
      throw Error(detail::concat(file->file_name(), ": unexpected tensor '", name,
                                 "' (the config does not use it, so seam would compute a different model)"));
    }
  }

 private:
  std::string missing_where_;  // the file a missing tensor should have been in
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

  const int64_t hidden = c.hidden_size, inter = c.intermediate_size, vocab = c.vocab_size;
  const int64_t q_size = c.q_size(), kv_size = c.kv_size(), head_dim = c.head_dim;
  ck->embed_tokens = index.take("model.embed_tokens.weight", {vocab, hidden});
  ck->layers.resize(size_t(c.n_layers));
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    LayerTensors& l = ck->layers[size_t(i)];
    l.input_layernorm = index.take(p + "input_layernorm.weight", {hidden});
    l.q_proj = index.take(p + "self_attn.q_proj.weight", {q_size, hidden});
    l.k_proj = index.take(p + "self_attn.k_proj.weight", {kv_size, hidden});
    l.v_proj = index.take(p + "self_attn.v_proj.weight", {kv_size, hidden});
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
    l.gate_proj = index.take(p + "mlp.gate_proj.weight", {inter, hidden});
    l.up_proj = index.take(p + "mlp.up_proj.weight", {inter, hidden});
    l.down_proj = index.take(p + "mlp.down_proj.weight", {hidden, inter});
  }
  ck->norm = index.take("model.norm.weight", {hidden});
  if (c.tie_word_embeddings) {
    // transformers ties the head to the embedding and ignores a stored lm_head.
    ck->lm_head = ck->embed_tokens;
    index.mark_used("lm_head.weight");
  } else {
    ck->lm_head = index.take("lm_head.weight", {vocab, hidden}, " (tie_word_embeddings is false)");
  }
  // FP8: the scales beside each quantized weight, and the checks that weights are F8_E4M3
  // exactly where the quantization config says (model/fp8_checkpoint.h).
  take_fp8_tensors(c, *ck, Fp8TensorSource{[&](const std::string& n) { return index.contains(n); },
                                           [&](const std::string& n) { return index.take_any(n); },
                                           [&] { return index.names(); }});
  index.check_all_used();
  return ck;
}

Checkpoint::~Checkpoint() = default;  // each Mapping's SafetensorsFile unmaps its file

}  // namespace seam
