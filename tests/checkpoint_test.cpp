// Checkpoint::open: stories260K checked against an independent read of the file,
// small checkpoints of every family / dtype / sharding written here, and every
// error case (the message names the file and the problem).
#include "model/checkpoint.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "safetensors_writer.h"
#include "test_util.h"

namespace seam {
namespace {

using nlohmann::json;
using test::StTensor;

// The float value of element i of a loaded tensor.
float element(const HostTensor& t, int64_t i) {
  float v;
  convert_to_f32(static_cast<const char*>(t.data) + i * int64_t(dtype_size(t.dtype)), t.dtype, &v, 1);
  return v;
}

// Every element of `t` equals what model_tensors stored for it.
void expect_values(const HostTensor& t, const std::vector<StTensor>& written, const std::string& dtype) {
  int seed = test::seed_of(written, t.name);
  ASSERT_GE(seed, 0) << t.name;
  ASSERT_EQ(t.shape, written[size_t(seed)].shape) << t.name;
  for (int64_t i = 0; i < t.numel(); ++i)
    ASSERT_EQ(element(t, i), test::stored_value(i, seed, dtype)) << t.name << " element " << i;
}

struct Folder {
  std::string dir;
  ModelConfig config;
  std::vector<StTensor> tensors;
};

// A folder with config.json from `cfg` and model.safetensors holding every tensor it needs.
Folder make_folder(const json& cfg, const std::string& dtype = "F32") {
  Folder f;
  f.dir = test::make_temp_dir("ckpt");
  test::write_config(f.dir, cfg);
  f.config = load_model_config(f.dir);
  f.tensors = test::model_tensors(f.config, dtype);
  return f;
}

void write_single(const Folder& f) { test::write_safetensors(f.dir + "/model.safetensors", f.tensors); }

StTensor* find(std::vector<StTensor>& ts, const std::string& name) {
  for (auto& t : ts)
    if (t.name == name) return &t;
  return nullptr;
}

void expect_open_error(const Folder& f, std::initializer_list<std::string> parts) {
  try {
    Checkpoint::open(f.dir, f.config);
    ADD_FAILURE() << "expected an error containing '" << *parts.begin() << "'";
  } catch (const Error& e) {
    std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "message: " << msg << "\nmissing: " << p;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "one-line message: " << msg;
  }
}

bool mapped(const std::string& path) {
  std::string maps = test::read_file("/proc/self/maps");
  return maps.find(std::filesystem::canonical(path).string()) != std::string::npos;
}

TEST(Checkpoint, Stories260K) {
  const std::string dir = test::stories_dir();
  ModelConfig c = load_model_config(dir);
  auto ck = Checkpoint::open(dir, c);
  ASSERT_EQ(ck->layers.size(), 5u);
  EXPECT_EQ(ck->embed_tokens.shape, (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(ck->lm_head.data, ck->embed_tokens.data);  // tied
  EXPECT_EQ(ck->norm.shape, (std::vector<int64_t>{64}));
  const LayerTensors& l3 = ck->layers[3];
  EXPECT_EQ(l3.k_proj.shape, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(l3.o_proj.shape, (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(l3.gate_proj.shape, (std::vector<int64_t>{172, 64}));
  EXPECT_EQ(l3.down_proj.shape, (std::vector<int64_t>{64, 172}));
  EXPECT_FALSE(l3.q_bias.defined());
  EXPECT_FALSE(l3.q_norm.defined());
  EXPECT_EQ(l3.k_proj.dtype, DType::f32);

  // Independent read: parse the header here and compare the bytes of a few tensors.
  const std::string file = test::read_file(dir + "/model.safetensors");
  uint64_t n = 0;
  std::memcpy(&n, file.data(), 8);
  json header = json::parse(file.substr(8, n));
  const char* data = file.data() + 8 + n;
  for (const HostTensor* t : std::vector<const HostTensor*>{&l3.k_proj, &ck->norm, &ck->layers[0].down_proj, &ck->embed_tokens}) {
    const json& e = header.at(t->name);
    EXPECT_EQ(e.at("shape").get<std::vector<int64_t>>(), t->shape) << t->name;
    size_t begin = e.at("data_offsets")[0], end = e.at("data_offsets")[1];
    ASSERT_EQ(end - begin, size_t(t->numel()) * 4) << t->name;
    EXPECT_EQ(std::memcmp(t->data, data + begin, end - begin), 0) << t->name;
    float first;
    std::memcpy(&first, data + begin, 4);
    EXPECT_EQ(element(*t, 0), first) << t->name;
  }
}

TEST(Checkpoint, UnmapsOnDestruction) {
  Folder f = make_folder(test::tiny_config_json());
  write_single(f);
  auto ck = Checkpoint::open(f.dir, f.config);
  EXPECT_TRUE(mapped(f.dir + "/model.safetensors"));
  ck.reset();
  EXPECT_FALSE(mapped(f.dir + "/model.safetensors"));
}

TEST(Checkpoint, UntiedLlamaValues) {
  Folder f = make_folder(test::tiny_config_json());
  write_single(f);
  auto ck = Checkpoint::open(f.dir, f.config);
  ASSERT_EQ(ck->layers.size(), 2u);
  EXPECT_NE(ck->lm_head.data, ck->embed_tokens.data);
  expect_values(ck->lm_head, f.tensors, "F32");
  expect_values(ck->embed_tokens, f.tensors, "F32");
  expect_values(ck->layers[1].q_proj, f.tensors, "F32");
  expect_values(ck->layers[1].down_proj, f.tensors, "F32");
}

TEST(Checkpoint, Bf16AndF16) {
  for (const char* dtype : {"BF16", "F16"}) {
    json cfg = test::tiny_config_json();
    cfg["torch_dtype"] = dtype == std::string("BF16") ? "bfloat16" : "float16";
    Folder f = make_folder(cfg, dtype);
    write_single(f);
    auto ck = Checkpoint::open(f.dir, f.config);
    DType want = dtype == std::string("BF16") ? DType::bf16 : DType::f16;
    EXPECT_EQ(ck->layers[0].k_proj.dtype, want);
    EXPECT_EQ(ck->norm.dtype, want);
    expect_values(ck->layers[0].k_proj, f.tensors, dtype);
    expect_values(ck->layers[1].up_proj, f.tensors, dtype);
    expect_values(ck->norm, f.tensors, dtype);
  }
}

TEST(Checkpoint, Qwen2Biases) {
  Folder f = make_folder(test::tiny_config_json("Qwen2ForCausalLM"));
  write_single(f);
  auto ck = Checkpoint::open(f.dir, f.config);
  const LayerTensors& l = ck->layers[1];
  EXPECT_EQ(l.q_bias.shape, (std::vector<int64_t>{16}));
  EXPECT_EQ(l.k_bias.shape, (std::vector<int64_t>{8}));
  EXPECT_FALSE(l.o_bias.defined());
  EXPECT_FALSE(l.q_norm.defined());
  expect_values(l.v_bias, f.tensors, "F32");
}

TEST(Checkpoint, Qwen3QkNormAndBias) {
  json cfg = test::tiny_config_json("Qwen3ForCausalLM");
  cfg["head_dim"] = 8;  // q_size 32 != hidden 16, as in real Qwen3
  Folder f = make_folder(cfg);
  write_single(f);
  auto ck = Checkpoint::open(f.dir, f.config);
  const LayerTensors& l = ck->layers[0];
  EXPECT_EQ(l.q_proj.shape, (std::vector<int64_t>{32, 16}));
  EXPECT_EQ(l.o_proj.shape, (std::vector<int64_t>{16, 32}));
  EXPECT_EQ(l.q_norm.shape, (std::vector<int64_t>{8}));
  expect_values(l.k_norm, f.tensors, "F32");
  EXPECT_FALSE(l.q_bias.defined());

  cfg["attention_bias"] = true;
  Folder b = make_folder(cfg);
  write_single(b);
  auto ckb = Checkpoint::open(b.dir, b.config);
  EXPECT_EQ(ckb->layers[1].q_bias.shape, (std::vector<int64_t>{32}));
  expect_values(ckb->layers[1].o_bias, b.tensors, "F32");
}

// Phi-3's fused qkv_proj and gate_up_proj load as row views of the stored tensors.
TEST(Checkpoint, Phi3FusedTensorsAreSplitIntoRowViews) {
  Folder f = make_folder(test::tiny_config_json("Phi3ForCausalLM"));
  write_single(f);
  auto ck = Checkpoint::open(f.dir, f.config);
  const LayerTensors& l = ck->layers[1];
  EXPECT_EQ(l.q_proj.shape, (std::vector<int64_t>{16, 16}));
  EXPECT_EQ(l.k_proj.shape, (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(l.v_proj.shape, (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(l.up_proj.shape, (std::vector<int64_t>{24, 16}));
  const int seed = test::seed_of(f.tensors, "model.layers.1.self_attn.qkv_proj.weight");
  ASSERT_GE(seed, 0);
  // v's first element is row q_size + kv_size = 24 of the fused [32, 16] tensor.
  EXPECT_EQ(element(l.v_proj, 0), test::stored_value(24 * 16, seed, "F32"));
  const int gu_seed = test::seed_of(f.tensors, "model.layers.1.mlp.gate_up_proj.weight");
  EXPECT_EQ(element(l.up_proj, 5), test::stored_value(24 * 16 + 5, gu_seed, "F32"));

  find(f.tensors, "model.layers.0.self_attn.qkv_proj.weight")->shape = {24, 16};
  find(f.tensors, "model.layers.0.self_attn.qkv_proj.weight")->bytes.resize(24 * 16 * 4);
  write_single(f);
  expect_open_error(f, {"tensor 'model.layers.0.self_attn.qkv_proj.weight' has shape [24, 16], expected [32, 16]"});
}

TEST(Checkpoint, GemmaNormsAndMultimodalNames) {
  Folder f = make_folder(test::tiny_config_json("Gemma2ForCausalLM"));
  write_single(f);
  auto ck = Checkpoint::open(f.dir, f.config);
  expect_values(ck->layers[0].pre_feedforward_layernorm, f.tensors, "F32");
  expect_values(ck->layers[1].post_feedforward_layernorm, f.tensors, "F32");
  f.tensors.erase(f.tensors.begin() + test::seed_of(f.tensors, "model.layers.1.pre_feedforward_layernorm.weight"));
  write_single(f);
  expect_open_error(f, {"missing tensor 'model.layers.1.pre_feedforward_layernorm.weight'"});

  // A multimodal checkpoint: vision tensors are skipped, any other stray tensor is still an error.
  json mm = {{"architectures", {"Gemma3ForConditionalGeneration"}},
             {"text_config", test::tiny_config_json("Gemma3ForCausalLM")}};
  Folder m = make_folder(mm);
  m.tensors.push_back(test::make_tensor("model.vision_tower.embeddings.patch_embedding.weight", "F32", {4, 4}, 99));
  m.tensors.push_back(test::make_tensor("model.multi_modal_projector.mm_soft_emb_norm.weight", "F32", {4}, 98));
  write_single(m);
  auto ckm = Checkpoint::open(m.dir, m.config);
  expect_values(ckm->layers[0].q_norm, m.tensors, "F32");
  m.tensors.push_back(test::make_tensor("model.audio_tower.w", "F32", {4}, 97));
  write_single(m);
  expect_open_error(m, {"unexpected tensor 'model.audio_tower.w'"});
}

// Two shards and an index json, tensors split by layer.
Folder make_sharded() {
  Folder f = make_folder(test::tiny_config_json());
  std::vector<StTensor> a, b;
  json weight_map = json::object();
  for (const auto& t : f.tensors) {
    bool second = t.name.rfind("model.layers.1.", 0) == 0 || t.name == "lm_head.weight";
    (second ? b : a).push_back(t);
    weight_map[t.name] = second ? "model-00002-of-00002.safetensors" : "model-00001-of-00002.safetensors";
  }
  test::write_safetensors(f.dir + "/model-00001-of-00002.safetensors", a);
  test::write_safetensors(f.dir + "/model-00002-of-00002.safetensors", b);
  json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", weight_map}};
  test::write_file(f.dir + "/model.safetensors.index.json", index.dump(2));
  return f;
}

TEST(Checkpoint, Sharded) {
  Folder f = make_sharded();
  auto ck = Checkpoint::open(f.dir, f.config);
  expect_values(ck->layers[0].gate_proj, f.tensors, "F32");
  expect_values(ck->layers[1].gate_proj, f.tensors, "F32");
  expect_values(ck->lm_head, f.tensors, "F32");
  expect_values(ck->norm, f.tensors, "F32");
  EXPECT_TRUE(mapped(f.dir + "/model-00001-of-00002.safetensors"));
  EXPECT_TRUE(mapped(f.dir + "/model-00002-of-00002.safetensors"));
}

// ---- errors ----

TEST(CheckpointErrors, MissingSafetensors) {
  Folder f = make_folder(test::tiny_config_json());
  expect_open_error(f, {"model.safetensors: file not found"});
}

TEST(CheckpointErrors, MissingTensor) {
  Folder f = make_folder(test::tiny_config_json());
  f.tensors.erase(f.tensors.begin() + test::seed_of(f.tensors, "model.layers.1.mlp.up_proj.weight"));
  write_single(f);
  expect_open_error(f, {"model.safetensors: missing tensor 'model.layers.1.mlp.up_proj.weight'"});
}

TEST(CheckpointErrors, MissingLmHeadWhenUntied) {
  Folder f = make_folder(test::tiny_config_json());
  f.tensors.pop_back();  // lm_head.weight
  write_single(f);
  expect_open_error(f, {"model.safetensors: missing tensor 'lm_head.weight' (tie_word_embeddings is false)"});
}

TEST(CheckpointErrors, MissingBias) {
  Folder f = make_folder(test::tiny_config_json());
  f.config.attention_bias = true;  // as a Qwen2 config would say
  write_single(f);
  expect_open_error(f, {"model.safetensors: missing tensor 'model.layers.0.self_attn.q_proj.bias'"});
}

TEST(CheckpointErrors, MisShapedTensor) {
  json cfg = test::tiny_config_json();
  Folder f = make_folder(cfg);
  *find(f.tensors, "model.layers.0.self_attn.q_proj.weight") =
      test::make_tensor("model.layers.0.self_attn.q_proj.weight", "F32", {16, 8}, 0);
  write_single(f);
  expect_open_error(f, {"model.safetensors: tensor 'model.layers.0.self_attn.q_proj.weight' has shape [16, 8], "
                        "expected [16, 16]"});
}

TEST(CheckpointErrors, UnsupportedDtype) {
  Folder f = make_folder(test::tiny_config_json());
  *find(f.tensors, "model.layers.0.mlp.gate_proj.weight") =
      test::make_tensor("model.layers.0.mlp.gate_proj.weight", "I8", {24, 16}, 0);
  write_single(f);
  expect_open_error(f, {"model.safetensors: tensor 'model.layers.0.mlp.gate_proj.weight' has unsupported dtype I8"});
}

TEST(CheckpointErrors, UnexpectedTensor) {
  Folder f = make_folder(test::tiny_config_json());
  f.tensors.push_back(test::make_tensor("model.layers.0.self_attn.o_proj.bias", "F32", {16}, 0));
  write_single(f);
  expect_open_error(f, {"model.safetensors: unexpected tensor 'model.layers.0.self_attn.o_proj.bias'"});

  // Old exports' RoPE tables are harmless.
  f.tensors.back() = test::make_tensor("model.layers.0.self_attn.rotary_emb.inv_freq", "F32", {2}, 0);
  write_single(f);
  EXPECT_NO_THROW(Checkpoint::open(f.dir, f.config));
}

TEST(CheckpointErrors, TruncatedFile) {
  Folder f = make_folder(test::tiny_config_json());
  std::string bytes = test::safetensors_bytes(f.tensors);
  test::write_file(f.dir + "/model.safetensors", bytes.substr(0, bytes.size() - 100));
  expect_open_error(f, {"model.safetensors: tensor 'lm_head.weight': data_offsets", "outside the data section",
                        "truncated"});
  test::write_file(f.dir + "/model.safetensors", bytes.substr(0, 5));
  expect_open_error(f, {"model.safetensors: truncated: 5 bytes"});
}

TEST(CheckpointErrors, HeaderOffsetsOutOfRange) {
  Folder f = make_folder(test::tiny_config_json());
  json header = test::safetensors_header(f.tensors);
  std::string data;
  for (const auto& t : f.tensors) data += t.bytes;
  header["model.norm.weight"]["data_offsets"] = {data.size() - 8, data.size() + 56};
  test::write_file(f.dir + "/model.safetensors", test::raw_safetensors(header.dump(), data));
  expect_open_error(f, {"model.safetensors: tensor 'model.norm.weight': data_offsets [", "outside the data section"});

  header = test::safetensors_header(f.tensors);
  header["model.norm.weight"]["data_offsets"] = {64, 32};  // begin > end
  test::write_file(f.dir + "/model.safetensors", test::raw_safetensors(header.dump(), data));
  expect_open_error(f, {"model.safetensors: tensor 'model.norm.weight': data_offsets [64, 32] begin after they end"});

  header = test::safetensors_header(f.tensors);
  header["model.norm.weight"]["data_offsets"] = {0, 60};  // 15 floats for shape [16]
  test::write_file(f.dir + "/model.safetensors", test::raw_safetensors(header.dump(), data));
  expect_open_error(f, {"model.safetensors: tensor 'model.norm.weight': data_offsets [0, 60] hold 60 bytes, but "
                        "shape [16] of F32 needs 64"});
}

TEST(CheckpointErrors, HeaderLengthBeyondFile) {
  Folder f = make_folder(test::tiny_config_json());
  std::string bytes = test::safetensors_bytes(f.tensors);
  uint64_t huge = bytes.size();  // header length = whole file: past the end by 8
  std::memcpy(bytes.data(), &huge, 8);
  test::write_file(f.dir + "/model.safetensors", bytes);
  expect_open_error(f, {"model.safetensors: header length", "goes beyond the end of the file"});
}

TEST(CheckpointErrors, MalformedHeader) {
  Folder f = make_folder(test::tiny_config_json());
  test::write_file(f.dir + "/model.safetensors", test::raw_safetensors("{\"a\": [1, 2", "xxxxxxxx"));
  expect_open_error(f, {"model.safetensors header: malformed JSON at line 1"});
}

TEST(CheckpointErrors, IndexPointsToMissingShard) {
  Folder f = make_sharded();
  std::filesystem::remove(f.dir + "/model-00002-of-00002.safetensors");
  expect_open_error(f, {"model-00002-of-00002.safetensors: file not found (listed in model.safetensors.index.json)"});
}

TEST(CheckpointErrors, IndexErrors) {
  Folder f = make_sharded();
  json index = json::parse(test::read_file(f.dir + "/model.safetensors.index.json"));
  // The index places a tensor in the wrong shard.
  index["weight_map"]["model.norm.weight"] = "model-00002-of-00002.safetensors";
  test::write_file(f.dir + "/model.safetensors.index.json", index.dump());
  expect_open_error(f, {"model-00002-of-00002.safetensors: missing tensor 'model.norm.weight'"});

  // A tensor the index does not list.
  index["weight_map"].erase("model.norm.weight");
  test::write_file(f.dir + "/model.safetensors.index.json", index.dump());
  expect_open_error(f, {"model.safetensors.index.json: missing tensor 'model.norm.weight'"});

  index["weight_map"]["model.norm.weight"] = "../elsewhere.safetensors";
  test::write_file(f.dir + "/model.safetensors.index.json", index.dump());
  expect_open_error(f, {"model.safetensors.index.json: weight_map entry 'model.norm.weight' names "
                        "'../elsewhere.safetensors'"});

  test::write_file(f.dir + "/model.safetensors.index.json", "{\"weight_map\": {");
  expect_open_error(f, {"model.safetensors.index.json: malformed JSON"});
}

TEST(CheckpointErrors, ExtraLayer) {
  json cfg = test::tiny_config_json();
  Folder f = make_folder(cfg);
  cfg["num_hidden_layers"] = 1;  // the file holds 2 layers, the config says 1
  test::write_config(f.dir, cfg);
  f.config = load_model_config(f.dir);
  write_single(f);
  expect_open_error(f, {"model.safetensors: unexpected tensor 'model.layers.1."});
}

}  // namespace
}  // namespace seam
