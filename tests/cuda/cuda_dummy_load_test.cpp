// --load-format dummy on the GPU: the CUDA fill_random kernel writes the same bits as the host
// stream (core/random_fill.h) rounded to the tensor's dtype, and a dummy tiny MoE model on the
// GPU in float32 gives the cpu backend's dummy logits (the same weights; the float32 kernels'
// rounding apart), with graphs on.
#include <gtest/gtest.h>

#include <filesystem>

#include "backend/backend_factory.h"
#include "cuda_test_util.h"
#include "engine/engine.h"
#include "engine/engine_bench_access.h"
#include "hf_reference.h"
#include "test_util.h"

namespace seam::test {
namespace {

class CudaFillRandom : public CudaTest {};

TEST_F(CudaFillRandom, SameBitsAsTheHostStream) {
  CpuBackend cpu;
  const RandomFill f{0x1234abcdull, 777, 0.05f, 1.f};
  const int64_t n = (int64_t(1) << 20) + 3;  // more than one block stride, and a ragged tail
  for (DType t : {DType::f32, DType::bf16, DType::f16}) {
    Tensor dev = empty(t, {n});
    gpu->fill_random(dev, f);
    std::vector<float> host(static_cast<size_t>(n));
    cpu.fill_random(Tensor(host.data(), DType::f32, Device::cpu, {n}), f);
    EXPECT_EQ(download(dev), round_to(host, t)) << short_name(t);
  }
}

std::string config_only_copy(const std::string& name) {
  const std::string src = std::string(SEAM_SOURCE_DIR) + "/tests/data/hf_tiny/" + name;
  const std::string dir = make_temp_dir("cuda_dummy_" + name);
  for (const char* f : {"config.json", "tokenizer.json"}) std::filesystem::copy_file(src + "/" + f, dir + "/" + f);
  return dir;
}

TEST(CudaDummyLoad, TinyMoeMatchesTheCpuDummyModel) {
  std::string why;
  if (!cuda_device_available(&why)) GTEST_SKIP() << "no GPU: " << why;
  for (const char* name : {"tiny-qwen3-moe", "tiny-qwen2-moe", "tiny-mixtral"}) {
    const std::string dir = config_only_copy(name);
    const std::vector<RefPrompt> prompts =
        load_hf_reference(std::string(SEAM_SOURCE_DIR) + "/tests/data/hf_tiny/" + name);
    auto logits_on = [&](Device d) {
      EngineConfig cfg = tiny_engine_config(dir);
      cfg.load_format = "dummy";
      cfg.device = d;
      Engine engine(cfg);
      return run_logits(EngineBenchAccess::runner(engine), prompts, engine.model_info().vocab_size, 64);
    };
    const auto gpu = logits_on(Device::cuda), cpu = logits_on(Device::cpu);
    ASSERT_EQ(gpu.size(), cpu.size());
    for (size_t i = 0; i < gpu.size(); ++i) EXPECT_LT(rel_err(gpu[i], cpu[i]), 1e-4) << name << " logits row " << i;
  }
}

}  // namespace
}  // namespace seam::test
