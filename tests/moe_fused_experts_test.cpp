// Checkpoints with pre-fused experts (transformers 5's in-memory layout, which some exports
// store): per layer mlp.experts.gate_up_proj [n_experts, 2 * inter, hidden] (each expert's gate
// rows, then its up rows) and mlp.experts.down_proj [n_experts, hidden, inter], Mixtral's block
// under mlp. as well. Written here from the tiny per-expert checkpoints of tests/data/hf_tiny;
// the fused copy must give the per-expert checkpoint's logits bit for bit (and so transformers'
// within 1e-4), and a wrong shape or a checkpoint holding both layouts is refused by name.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "core/error.h"
#include "engine/engine.h"
#include "engine/engine_bench_access.h"
#include "hf_reference.h"
#include "model/safetensors.h"
#include "safetensors_writer.h"
#include "test_util.h"

namespace seam::test {
namespace {

namespace fs = std::filesystem;

std::string tiny_dir(const std::string& name) { return std::string(SEAM_SOURCE_DIR) + "/tests/data/hf_tiny/" + name; }

StTensor copy_of(const SafetensorsFile& f, const std::string& name, const std::string& new_name) {
  const HostTensor t = f.tensor(name);
  EXPECT_EQ(t.dtype, DType::f32);
  return {new_name, "F32", t.shape, std::string(static_cast<const char*>(t.data), size_t(t.numel()) * 4)};
}

// The tiny checkpoint `name` rewritten with fused experts; optionally broken: the per-expert
// tensors kept beside the fused ones, or down_proj stored transposed.
std::string fused_copy(const std::string& name, bool keep_per_expert = false, bool wrong_down_shape = false) {
  const std::string src = tiny_dir(name), dir = make_temp_dir("fused_" + name);
  for (const char* f : {"config.json", "tokenizer.json", "reference.json"})
    fs::copy_file(src + "/" + f, dir + "/" + f);
  const auto file = SafetensorsFile::open(src + "/model.safetensors");
  const bool mixtral = name == "tiny-mixtral";
  const std::string block = mixtral ? "block_sparse_moe." : "mlp.";
  const std::string gate = mixtral ? "w1" : "gate_proj", up = mixtral ? "w3" : "up_proj",
                    down = mixtral ? "w2" : "down_proj";
  std::vector<StTensor> out;
  std::map<std::string, std::vector<std::string>> layers;  // "model.layers.N." -> its expert tensor names
  for (const std::string& n : file->tensor_names()) {
    const size_t at = n.find(block + "experts.");
    if (at == std::string::npos) {
      // Mixtral's router moves with its block: block_sparse_moe.gate -> mlp.gate.
      std::string renamed = n;
      if (mixtral && n.find("block_sparse_moe.gate.weight") != std::string::npos)
        renamed.replace(n.find("block_sparse_moe."), 17, "mlp.");
      out.push_back(copy_of(*file, n, renamed));
      continue;
    }
    layers[n.substr(0, at)].push_back(n);
    if (keep_per_expert) out.push_back(copy_of(*file, n, n));
  }
  for (const auto& [prefix, names] : layers) {
    const int64_t n_experts = int64_t(names.size()) / 3;
    std::string gate_up_bytes, down_bytes;
    int64_t inter = 0, hidden = 0;
    for (int64_t e = 0; e < n_experts; ++e) {
      const std::string x = prefix + block + "experts." + std::to_string(e) + ".";
      for (const std::string* part : {&gate, &up}) gate_up_bytes += copy_of(*file, x + *part + ".weight", "").bytes;
      const StTensor d = copy_of(*file, x + down + ".weight", "");
      hidden = d.shape[0], inter = d.shape[1];
      down_bytes += d.bytes;
    }
    out.push_back({prefix + "mlp.experts.gate_up_proj", "F32", {n_experts, 2 * inter, hidden}, gate_up_bytes});
    const std::vector<int64_t> down_shape =
        wrong_down_shape ? std::vector<int64_t>{n_experts, inter, hidden} : std::vector<int64_t>{n_experts, hidden, inter};
    out.push_back({prefix + "mlp.experts.down_proj", "F32", down_shape, down_bytes});
  }
  write_safetensors(dir + "/model.safetensors", out);
  return dir;
}

std::vector<std::vector<float>> logits_of(const std::string& dir, const std::vector<RefPrompt>& prompts) {
  EngineConfig cfg = tiny_engine_config(dir);
  cfg.disable_cuda_graph = true;
  Engine engine(cfg);
  return run_logits(EngineBenchAccess::runner(engine), prompts, engine.model_info().vocab_size, 64,
                    /*batched=*/false);
}

class FusedExperts : public ::testing::TestWithParam<std::string> {};

TEST_P(FusedExperts, SameLogitsAsPerExpertCheckpoint) {
  const std::string name = GetParam();
  const std::vector<RefPrompt> prompts = load_hf_reference(tiny_dir(name));
  const auto fused = logits_of(fused_copy(name), prompts);
  const auto per_expert = logits_of(tiny_dir(name), prompts);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(fused[i], per_expert[i]) << name << " prompt " << i;
    EXPECT_LT(rel_err(fused[i], prompts[i].logits_fp32), 1e-4) << name << " prompt " << i;
  }
}

TEST_P(FusedExperts, WrongShapeAndBothLayoutsRefused) {
  const std::string name = GetParam();
  const std::vector<RefPrompt> prompts = load_hf_reference(tiny_dir(name));
  try {
    logits_of(fused_copy(name, false, /*wrong_down_shape=*/true), prompts);
    FAIL() << "a down_proj of the wrong shape must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mlp.experts.down_proj' has shape"), std::string::npos) << e.what();
  }
  try {
    logits_of(fused_copy(name, /*keep_per_expert=*/true), prompts);
    FAIL() << "per-expert tensors beside the fused ones must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unexpected tensor"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Tiny, FusedExperts, ::testing::Values("tiny-qwen3-moe", "tiny-qwen2-moe", "tiny-mixtral"),
                         [](const auto& info) { return hf_tiny_param_name(info.param); });

}  // namespace
}  // namespace seam::test
